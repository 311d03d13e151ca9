"""The README's HTTP API section runs as written: `harvest http` beside its worker, then its curl lines."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harvest_engine.http.routes import ENDPOINTS
from tests.test_readme import (
    README,
    env,
    script,
    shell_block,
    start_server,
    stop_server,
    wait_until_served,
)


def _section() -> str:
    text = README.read_text()
    return text[text.index("## The HTTP API") : text.index("## Examples")]


def test_the_readmes_route_table_names_every_route() -> None:
    section = _section()
    for endpoint in ENDPOINTS:
        last = endpoint.path.rsplit("/", 1)[-1]
        shown = (
            f"{endpoint.method} {endpoint.path}" in section
            or f"`/{last}" in section
            or f"/{last}`" in section
        )
        assert shown, f"{endpoint.method} {endpoint.path} is not in the README's table"


def _harvest_http(folder: Path) -> tuple[subprocess.Popen[str], str]:
    """Run the README's token line and its `harvest http` line (on a free port); the base URL."""
    steps = shell_block("harvest http").code.splitlines()
    (token_line,) = [s for s in steps if "token.txt" in s and "harvest http" not in s]
    subprocess.run(["bash", "-e", "-c", token_line], cwd=folder, env=_env(), check=True)
    (serve_line,) = [s for s in steps if s.startswith("harvest http")]
    argv = shlex.split(serve_line, comments=True)
    proc = subprocess.Popen(
        [*argv, "--port", "0"],
        cwd=folder,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    found = re.match(r"serving (http://127\.0\.0\.1:\d+)/api/v1", first)
    assert found, (
        first,
        proc.poll(),
        proc.stderr.read() if proc.poll() is not None else "",
    )
    return proc, found.group(1)


def _env() -> dict[str, str]:
    """The README's shell: this checkout's harvest, and `harvest` / `python` on PATH."""
    bindir = str(Path(sys.executable).parent)
    return dict(env(), PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_readmes_curl_lines_run_against_harvest_http_beside_its_worker(
    tmp_path: Path,
) -> None:
    (tmp_path / "worker.py").write_text(script("worker.py").code)
    worker = start_server(tmp_path, "worker.py")
    api: subprocess.Popen[str] | None = None
    try:
        wait_until_served(worker)
        api, base = _harvest_http(tmp_path)
        curls = shell_block("curl -sf").code.replace("http://127.0.0.1:8765", base)
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", curls],
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert '"served":true' in done.stdout
        assert '"type":"ExecutionNotFound"' in done.stdout
        assert '"reset_from":' in done.stdout  # the reset line
        assert '{"count":' in done.stdout  # the bulk cancel line
        api.send_signal(signal.SIGTERM)
        out, err = api.communicate(timeout=30)
        assert api.returncode == 0, out + err
    finally:
        if api is not None and api.poll() is None:
            api.kill()
            api.communicate()
        stop_server(worker)
