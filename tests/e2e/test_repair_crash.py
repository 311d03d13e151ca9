"""A kill -9 in the middle of a bulk reset leaves every run untouched or fully moved.

A real process runs `reset_many` over running runs, sleeping inside each
reset's transaction (after the old run's end, before the new run); it is
killed mid-way. Every old run is then either as it was (RUNNING, no link,
no new run from it) or fully moved (TERMINATED, linked to one new run whose
history is the old one's up to the point). A repeat of the bulk call
finishes the rest, and resets no run twice (nor the new runs, which match
its filter too).
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from harvest_engine import ExecutionFilter, SqliteReader

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Workers

RUNS = 6


def check_each_run_is_untouched_or_moved(db: Path) -> tuple[int, int]:
    """(moved, untouched) old runs; fails on a run half moved."""
    with SqliteReader.open(db) as reader:
        flt = ExecutionFilter().workflow_name("bumpy").limit(1000)
        runs = [
            reader.describe(r.exec_id) for r in reader.list_executions(flt).executions
        ]
        old = [r for r in runs if r.reset_from is None]
        new = [r for r in runs if r.reset_from is not None]
        assert len(old) == RUNS
        moved = 0
        for run in old:
            children = [n for n in new if n.reset_from == run.exec_id]
            if run.reset_to is None:
                assert run.state == "RUNNING"
                assert children == []
                continue
            moved += 1
            assert run.state == "TERMINATED"
            assert [c.exec_id for c in children] == [run.reset_to]
            kept = reader.load_history(run.reset_to)
            assert [e.type for e in kept] == [
                e.type for e in reader.load_history(run.exec_id)[: len(kept)]
            ]
        assert len(new) == moved
    return moved, RUNS - moved


def test_a_kill_in_the_middle_of_reset_many_leaves_each_run_untouched_or_moved(
    workers: Workers, tmp_path: Path
) -> None:
    db = tmp_path / "crash.db"
    seeded = workers.finish(workers.spawn("reset_crash_worker", db, "seed", str(RUNS)))
    assert seeded.stdout.strip() == "seeded", seeded.stderr

    proc = workers.spawn("reset_crash_worker", db, "reset")
    assert proc.stdout is not None
    for _ in range(3):  # the third reset is inside its transaction
        assert proc.stdout.readline().strip() == "copying"
    proc.send_signal(signal.SIGKILL)
    workers.finish(proc)

    moved, untouched = check_each_run_is_untouched_or_moved(db)
    assert moved == 2
    assert untouched == RUNS - 2

    again = workers.finish(workers.spawn("reset_crash_worker", db, "reset"))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().splitlines()[-1] == f"reset {RUNS - 2}"
    assert check_each_run_is_untouched_or_moved(db) == (RUNS, 0)
