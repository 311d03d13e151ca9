"""Fixtures for the end-to-end tests: worker scripts run as real subprocesses."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
WORKERS = Path(__file__).resolve().parent / "workers"
EXAMPLES = ROOT / "examples"

# Generous bounds: a loaded CI machine may take seconds to start an interpreter.
PROCESS_TIMEOUT = 60.0
POLL_INTERVAL = 0.01


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a worker: this one, with the repository importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p
    )
    env.update(extra)
    return env


class Workers:
    """Starts worker scripts from tests/e2e/workers and cleans up after the test."""

    examples = EXAMPLES

    def __init__(self) -> None:
        self._started: list[subprocess.Popen[str]] = []

    def spawn(
        self, script: str, *args: str | Path, **env: str
    ) -> subprocess.Popen[str]:
        """Start `workers/<script>.py` with `args` in a fresh interpreter."""
        return self.spawn_path(WORKERS / f"{script}.py", *args, **env)

    def spawn_path(
        self, script: Path, *args: str | Path, cwd: Path | None = None, **env: str
    ) -> subprocess.Popen[str]:
        """Start any Python script with `args` in a fresh interpreter."""
        proc = subprocess.Popen(
            [sys.executable, str(script), *map(str, args)],
            cwd=cwd,
            env=child_env(**env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._started.append(proc)
        return proc

    def run(
        self, script: str, *args: str | Path, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """Run a worker to its end (bounded by PROCESS_TIMEOUT)."""
        return self.finish(self.spawn(script, *args, **env))

    def finish(self, proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
        """Wait for a started process (bounded by PROCESS_TIMEOUT); its exit code and output."""
        try:
            out, err = proc.communicate(timeout=PROCESS_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"{proc.args} did not finish in {PROCESS_TIMEOUT:.0f}s: {err}")
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def run_json(self, script: str, *args: str | Path, **env: str) -> Any:
        """Run a worker that must exit 0 and print one JSON document; the document."""
        done = self.run(script, *args, **env)
        assert done.returncode == 0, (
            f"worker {script} failed ({done.returncode}):\n{done.stderr}"
        )
        return json.loads(done.stdout)

    @staticmethod
    def wait_for(
        condition: Callable[[], bool],
        what: str,
        proc: subprocess.Popen[str] | None = None,
        timeout: float = PROCESS_TIMEOUT,
    ) -> None:
        """Poll `condition` until it holds; fail naming `what` on timeout or if `proc` exits."""
        deadline = time.monotonic() + timeout
        while not condition():
            if proc is not None and proc.poll() is not None:
                out, err = proc.communicate()
                pytest.fail(
                    f"worker exited ({proc.returncode}) before {what}:\n{out}\n{err}"
                )
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(POLL_INTERVAL)

    @staticmethod
    def sigkill(proc: subprocess.Popen[str]) -> str:
        """SIGKILL a worker and reap it (no cleanup code of its own runs); its stdout."""
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=PROCESS_TIMEOUT)
        assert proc.returncode == -signal.SIGKILL
        return out

    @staticmethod
    def load(stem: str) -> ModuleType:
        """Import `workers/<stem>.py` in this process (the same code the workers run)."""
        name = f"harvest_e2e_{stem}"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, WORKERS / f"{stem}.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    def close(self) -> None:
        """Kill whatever a failing test left running."""
        for proc in self._started:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


@pytest.fixture
def workers() -> Iterator[Workers]:
    """Start worker subprocesses; any still running at the end are killed."""
    w = Workers()
    yield w
    w.close()
