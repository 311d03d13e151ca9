"""A test run killed mid-way leaves a server behind; the next run's first server removes it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.pg_server import OWNER, PREFIX, postgres_bin, sweep_abandoned

if TYPE_CHECKING:
    from collections.abc import Iterator

REPO = Path(__file__).resolve().parents[2]

STARTS_A_SERVER_AND_WAITS = """
import sys, time
from tests.pg_server import PostgresServer, postgres_bin
server = PostgresServer(postgres_bin())
print(server.root, flush=True)
time.sleep(120)
"""


@pytest.fixture
def temp_root() -> Iterator[Path]:
    """A temp folder the server's own user can walk into (pytest's tmp_path is 0700)."""
    root = Path(tempfile.mkdtemp(prefix="sweep-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _postmaster(root: Path) -> int:
    return int((root / "data" / "postmaster.pid").read_text().split()[0])


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for init to reap it does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


@pytest.mark.timeout(60)
def test_the_server_of_a_killed_run_is_stopped_and_its_folder_removed(
    temp_root: Path,
) -> None:
    bindir = postgres_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (make system-deps installs it)")
    child = subprocess.Popen(
        [sys.executable, "-c", STARTS_A_SERVER_AND_WAITS],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(temp_root), "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    root = Path(child.stdout.readline().strip())
    postmaster = _postmaster(root)
    live = temp_root / f"{PREFIX}live"
    live.mkdir()
    (live / OWNER).write_text(str(os.getpid()))  # a run still going: kept

    assert sweep_abandoned(bindir, temp_root) == []  # its owner still runs
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    child.stdout.close()
    assert _alive(postmaster)  # a killed run's server outlives it

    assert sweep_abandoned(bindir, temp_root) == [root]
    assert not root.exists()
    assert _gone(postmaster)
    assert live.exists()
