"""Group commit across a kill -9: a writer killed between a batch's decision commit and its completion commit.

The writer (workers/batch_writer.py) drives several runs in batched passes;
one body prints ``blocked <exec_id>`` after the commit that claimed it and
waits. The test kills the writer on that line, reopens the file and drives
every run to its end: each run completes exactly once with the right
result, no completion committed before the kill runs its body again, and
the killed body runs again once, in the new process.
"""

from __future__ import annotations

import json
import os
import select
import sqlite3
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess
    from pathlib import Path

    from conftest import Workers

RUNS = 6


def read_line(proc: subprocess.Popen[str], timeout: float = 60.0) -> str:
    """The writer's next stdout line, within `timeout` seconds."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.05)
        if ready:
            return proc.stdout.readline()
        if proc.poll() is not None:
            break
    raise AssertionError(f"the writer printed nothing (exit {proc.poll()})")


def committed_completions(db: Path) -> set[tuple[str, int]]:
    """(exec_id, activity_id) of every ActivityCompleted the file holds."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT exec_id, attrs FROM harvest_events WHERE type = 'ActivityCompleted'"
        ).fetchall()
    finally:
        conn.close()
    return {(e, int(json.loads(a)["activity_id"])) for e, a in rows}


def event_types(db: Path, exec_id: str) -> list[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT type FROM harvest_events WHERE exec_id = ? ORDER BY seq", (exec_id,)
        ).fetchall()
    finally:
        conn.close()
    return [r[0] for r in rows]


def bodies(folder: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in (folder / "bodies.log").read_text().splitlines()
    ]


def test_a_writer_killed_between_the_decision_and_the_completion_commit_completes_every_run_once(
    workers: Workers, tmp_path: Path
) -> None:
    db, folder = tmp_path / "workflows.db", tmp_path / "logs"
    folder.mkdir()
    writer = workers.spawn("batch_writer", "start", db, folder, str(RUNS))
    line = read_line(writer)
    assert line.startswith("blocked "), line
    blocked = line.split()[1]
    first_pid = writer.pid
    workers.sigkill(writer)

    before = committed_completions(db)
    # The blocked body's claim committed (its first body is recorded); its
    # own completion did not.
    assert (blocked, 1) in before
    assert (blocked, 2) not in before

    (folder / "release").touch()
    report = workers.run_json("batch_writer", "resume", db, folder)

    assert len(report) == RUNS
    assert sorted(report.values()) == [i * 10 + 3 for i in range(RUNS)]
    for exec_id in report:
        types = event_types(db, exec_id)
        assert types.count("WorkflowCompleted") == 1, exec_id
        assert types.count("ActivityCompleted") == 3, exec_id
        assert types[-1] == "WorkflowCompleted"

    ran = Counter((b["exec_id"], b["step"]) for b in bodies(folder))
    for exec_id, step in before:
        # A completion committed before the kill: its body never runs again.
        assert ran[(exec_id, step)] == 1, (exec_id, step)
    killed = [
        (b["pid"]) for b in bodies(folder) if (b["exec_id"], b["step"]) == (blocked, 2)
    ]
    assert killed == [first_pid, killed[1]]
    assert killed[1] != first_pid
    assert killed[1] != os.getpid()
    # Every body ran at least once, and only an uncommitted one ran twice.
    assert set(ran) == {(e, s) for e in report for s in (1, 2, 3)}
    assert all(count <= 2 for count in ran.values())
