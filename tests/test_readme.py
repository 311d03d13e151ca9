"""The README's code runs as written: its scripts, its snippets in order, its shell steps."""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from harvest_engine import ExecutionFilter, SqliteReader
from tests.pg_server import postgres_bin

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>\w*)\s*$")
_FILE = re.compile(r"^# (?P<name>[\w.]+\.py):")
_SKIP = re.compile(r"<!-- readme-test: skip: (?P<reason>.+?) -->")


@dataclass(frozen=True)
class Block:
    """One fenced code block of the README."""

    lang: str
    code: str
    line: int
    """Where its fence opens (1-based), for the failure message."""
    skip: str | None
    """The reason its `<!-- readme-test: skip: ... -->` marker gives, if any."""

    @property
    def filename(self) -> str | None:
        """The script it is meant to be (`# worker.py: ...` on its first line)."""
        found = _FILE.match(self.code)
        return found.group("name") if found else None


def readme_blocks(text: str | None = None) -> list[Block]:
    """Every fenced block of the README, in order, dedented (list items indent some)."""
    lines = (README.read_text() if text is None else text).splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if opened is None or not opened.group("lang"):
            i += 1
            continue
        indent = opened.group("indent")
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != f"{indent}```":
            end += 1
        before = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
        marker = _SKIP.search(before)
        blocks.append(
            Block(
                lang=opened.group("lang"),
                code=dedent("\n".join(lines[i + 1 : end])) + "\n",
                line=i + 1,
                skip=marker.group("reason") if marker else None,
            )
        )
        i = end + 1
    return blocks


def python_blocks() -> list[Block]:
    """The README's ```python blocks, in order."""
    return [b for b in readme_blocks() if b.lang == "python"]


def script(name: str) -> Block:
    """The README block that is the script `name` (`# name: ...` first line)."""
    (found,) = [b for b in python_blocks() if b.filename == name]
    return found


def env() -> dict[str, str]:
    """The environment of the scripts: this checkout's harvest first."""
    return dict(os.environ, PYTHONPATH=str(ROOT))


def start_server(folder: Path, name: str) -> subprocess.Popen[str]:
    """`python NAME` in the background, as the README starts a worker."""
    return subprocess.Popen(
        [sys.executable, name],
        cwd=folder,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until_served(proc: subprocess.Popen[str]) -> None:
    """Wait for the worker's "serving" line (a person starts the client after it)."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 30)
    first = proc.stdout.readline() if ready else ""
    assert first.startswith("serving"), (
        f"the worker did not start serving: {first!r} {proc.poll()}"
    )


def stop_server(proc: subprocess.Popen[str]) -> None:
    """SIGTERM, as a service manager stops it: the README's two lines end it cleanly."""
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, f"the worker did not stop cleanly: {out}{err}"


def run_script(folder: Path, name: str) -> subprocess.CompletedProcess[str]:
    """`python NAME`, which must end well within a minute."""
    done = subprocess.run(
        [sys.executable, name],
        cwd=folder,
        env=env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"{name} failed: {done.stdout}{done.stderr}"
    return done


def harvest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The `harvest` command in `folder`."""
    return subprocess.run(
        [sys.executable, "-m", "harvest_engine", *args],
        cwd=folder,
        env=env(),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_harvest_replay_takes_the_readme_worker_as_its_module(tmp_path: Path) -> None:
    """Importing worker.py runs nothing, so `harvest replay --module worker` replays with it."""
    for name in ("worker.py", "client.py"):
        (tmp_path / name).write_text(script(name).code)
    worker = start_server(tmp_path, "worker.py")
    try:
        wait_until_served(worker)
        done = run_script(tmp_path, "client.py")
    finally:
        stop_server(worker)
    assert "hello ann" in done.stdout
    with SqliteReader.open(tmp_path / "workflows.db") as reader:
        (run,) = reader.list_executions(
            ExecutionFilter().workflow_name("greet")
        ).executions
    replayed = harvest(
        tmp_path, "replay", "workflows.db", str(run.exec_id), "--module", "worker"
    )
    assert replayed.returncode == 0, replayed.stderr


README_DSN = "postgresql://app:secret@localhost/harvest"
"""The DSN the README's Postgres scripts name; a test swaps in its own server's."""


def run_scripts(folder: Path, blocks: list[Block], dsn: str) -> None:
    """Write each script block to its file and run it as the README says.

    One that serves starts in the background until its "serving" line; the
    next one runs to its end against it; then the server gets SIGTERM and
    must stop cleanly (the README's two signal lines).
    """
    servers: list[subprocess.Popen[str]] = []
    try:
        for block in blocks:
            assert block.filename is not None
            (folder / block.filename).write_text(block.code.replace(README_DSN, dsn))
            if ".serve(" in block.code:
                servers.append(server := start_server(folder, block.filename))
                wait_until_served(server)
            else:
                run_script(folder, block.filename)
                while servers:
                    stop_server(servers.pop())
        assert not servers, "a server was started but no script ran against it"
    finally:
        for server in servers:
            server.kill()
            server.communicate()


def test_every_python_block_of_the_readme_runs_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_dsn: str
) -> None:
    """Snippets run in one namespace, scripts as files, the way the README says to run them.

    A script that serves (`worker.py`) starts in the background; the next
    script (`client.py`) runs to its end against it; then the server gets
    SIGTERM and must stop cleanly. A block is left out only with a
    ``<!-- readme-test: skip: reason -->`` line above it.
    """
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    scripts: list[Block] = []
    ran = 0
    try:
        for block in python_blocks():
            if block.skip is not None:
                continue
            ran += 1
            if block.filename is not None:
                scripts.append(block)  # runs with its partner: worker, then client
                if ".serve(" not in block.code:
                    run_scripts(tmp_path, scripts, pg_dsn)
                    scripts.clear()
                continue
            code = compile(
                block.code, f"README.md:{block.line}", "exec", dont_inherit=True
            )
            exec(code, namespace)  # noqa: S102 - the README's own snippets
        assert not scripts, "a worker script has no client script after it"
    finally:
        rt = namespace.get("rt")
        if rt is not None:
            rt.close()
    assert ran >= 9
    skipped = [b for b in python_blocks() if b.skip is not None]
    assert len(skipped) <= 1, [(b.line, b.skip) for b in skipped]


def shell_block(containing: str) -> Block:
    """The README's ```sh block whose text holds `containing`."""
    (found,) = [b for b in readme_blocks() if b.lang == "sh" and containing in b.code]
    return found


def test_the_readmes_system_server_steps_are_shell_that_parses() -> None:
    """They install and start the machine's own cluster: checked, not run, here."""
    steps = shell_block("pg_ctlcluster").code
    assert "su postgres -c" in steps  # a bare createdb as root has no role
    done = subprocess.run(
        ["bash", "-n", "-c", steps], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_the_readmes_own_folder_server_serves_its_postgres_worker_and_client(
    tmp_path: Path,
) -> None:
    """Its lines run as written (as root, as the postgres user, as it says) and print the DSN."""
    bindir = postgres_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (make system-deps installs it)")
    steps = shell_block("initdb").code.replace(
        "/usr/lib/postgresql/15/bin", str(bindir)
    )
    # A short home: a Unix socket's path is at most 107 bytes.
    home = Path(tempfile.mkdtemp(prefix="hpg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # `su - postgres` first, as the README says for root
        entry = pwd.getpwnam("postgres")
        os.chown(home, entry.pw_uid, entry.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    shell = [*as_user, "env", f"HOME={home}", "bash", "-e", "-c"]
    try:
        done = subprocess.run(
            [*shell, steps],
            cwd=home,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        dsn = done.stdout.strip().splitlines()[-1]
        assert dsn == f"postgresql://app@/harvest?host={home}/harvest-pg"
        run_scripts(tmp_path, [script("pg_worker.py"), script("pg_client.py")], dsn)
    finally:
        subprocess.run(
            [*shell, 'pg_ctl -D "$HOME/harvest-pg/data" -m immediate stop'],
            env=dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}"),
            capture_output=True,
            timeout=60,
            check=False,
        )
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.slow
def test_the_readmes_repair_steps_run_as_written(tmp_path: Path) -> None:
    """With the shop worker copied beside them, each line does what its comment says."""
    steps = shell_block("harvest reset shop.db").code
    shutil.copy(ROOT / "tests" / "e2e" / "workers" / "shop_worker.py", tmp_path)
    bindir = tmp_path / "bin"  # `harvest` and `python` as an installed harvest has them
    bindir.mkdir()
    for name, command in (
        ("python", f'exec "{sys.executable}" "$@"'),
        ("harvest", f'exec "{sys.executable}" -m harvest_engine "$@"'),
    ):
        (bindir / name).write_text(f"#!/bin/sh\n{command}\n")
        (bindir / name).chmod(0o755)
    shell = subprocess.Popen(
        ["bash", "-c", steps + "kill %1; wait %1\n"],
        cwd=tmp_path,
        env=dict(env(), PATH=f"{bindir}:{os.environ['PATH']}"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its workers go with it, whatever happens
    )
    try:
        out, err = shell.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGKILL)
    assert "ended FAILED: 'amount'" in err, out + err
    assert '/shop_worker.py", line 44, in ship_order' in out, out + err
    assert '["charged K1","shipped K1"]' in out, out + err
    assert (tmp_path / "charges.txt").read_text() == "K1\n"
