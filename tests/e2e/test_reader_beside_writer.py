"""SqliteReader and `harvest tail` in one process, a live writer in another (guide §8, §11)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harvest_engine import ExecutionFilter, SqliteReader

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "workers" / "live_writer.py"
PROCESS_TIMEOUT = 60.0

Spawn = Callable[..., "subprocess.Popen[str]"]


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Start subprocesses with the repository importable; kill leftovers at the end."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str | Path) -> subprocess.Popen[str]:
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        )
        proc = subprocess.Popen(
            [sys.executable, *map(str, args)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def ask(writer: subprocess.Popen[str], command: str) -> str:
    """Send one command to the live writer and read its one-line answer."""
    assert writer.stdin is not None
    assert writer.stdout is not None
    writer.stdin.write(command + "\n")
    writer.stdin.flush()
    return writer.stdout.readline().strip()


@pytest.fixture
def writer(spawn: Spawn, tmp_path: Path) -> subprocess.Popen[str]:
    """A writer process holding `tmp_path/live.db`, once it is open."""
    proc = spawn(WORKER, tmp_path / "live.db")
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_the_reader_sees_each_commit_of_another_process_through_data_version(
    writer: subprocess.Popen[str], tmp_path: Path
) -> None:
    path = tmp_path / "live.db"
    with SqliteReader.open(path) as reader:
        versions = [reader.data_version()]
        assert reader.list_executions().executions == []
        exec_id = ask(writer, "start")
        versions.append(reader.data_version())
        (run,) = reader.list_executions().executions
        assert (str(run.exec_id), run.state) == (exec_id, "RUNNING")
        assert ask(writer, "finish " + exec_id) == "completed"
        versions.append(reader.data_version())
        assert reader.describe(exec_id).state == "COMPLETED"
        assert reader.load_history(exec_id)[-1].type == "WorkflowCompleted"
        assert reader.counts_by_state()["COMPLETED"] == 1
        assert len(set(versions)) == 3
        # Reading changes nothing the writer could see.
        stable = reader.data_version()
        reader.list_executions(ExecutionFilter().state("COMPLETED"))
        assert reader.data_version() == stable
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader._conn.execute("DELETE FROM harvest_executions")
    assert ask(writer, "quit") == "closed"
    writer.wait(timeout=PROCESS_TIMEOUT)
    assert writer.returncode == 0


def test_reading_a_closed_file_leaves_it_byte_identical(
    writer: subprocess.Popen[str], tmp_path: Path
) -> None:
    path = tmp_path / "live.db"
    exec_id = ask(writer, "start")
    assert ask(writer, "quit") == "closed"
    writer.wait(timeout=PROCESS_TIMEOUT)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with SqliteReader.open(path) as reader:
        reader.describe(exec_id)
        reader.visit_executions(None, lambda _: None)
        reader.pending_tasks(exec_id)
        reader.staged_signals(exec_id)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_harvest_tail_follows_the_writer(
    writer: subprocess.Popen[str], spawn: Spawn, tmp_path: Path
) -> None:
    path = tmp_path / "live.db"
    tail = spawn(
        "-m",
        "harvest_engine",
        "tail",
        path,
        "--interval",
        "50ms",
        "--max-seconds",
        str(PROCESS_TIMEOUT),
    )
    assert tail.stdout is not None
    exec_id = ask(writer, "start")
    first = tail.stdout.readline()
    assert "RUNNING" in first
    assert exec_id in first
    ask(writer, "finish " + exec_id)
    second = tail.stdout.readline()
    assert "COMPLETED" in second
    assert exec_id in second
