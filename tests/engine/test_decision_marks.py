"""A completion's needs_decision = 1 survives a decision that rolls back after it.

The SQLite store keeps a completion's mark until the commit and drops it
when the decision that follows writes the flag (decision_marks.py). A
decision that fails in its savepoint, or a one-run batch that fails whole
and runs again with savepoints, must leave the run marked in the file, so a
later pass decides it: a divergence writes nothing after its rollback, so
nothing else would mark the run.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityContext,
    ManualClock,
    NonDeterminismDetected,
    Runtime,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.events import HistoryEvent

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

pytestmark = pytest.mark.sqlite_only("the SQLite store's deferred decision marks")

# The deployment changes while the first activity runs: the decision that
# follows its completion replays the history under other code and diverges.
CODE: dict[str, object] = {"second": "bump", "runtime": None}


@activity
async def bump(ctx: ActivityContext, x: int) -> int:
    if CODE["second"] == "bump" and x == 1:
        CODE["second"] = "other"
        rt = CODE["runtime"]
        assert isinstance(rt, Runtime)
        rt.cache.clear()
    return x + 1


@activity
async def other(ctx: ActivityContext, x: int) -> int:
    return x


@workflow
async def drifts(ctx: WorkflowContext, x: int) -> int:
    first = bump if CODE["second"] == "bump" else other
    x = await ctx.execute_activity(first, x)
    return int(await ctx.execute_activity(bump, x))


@workflow
async def steady(ctx: WorkflowContext, x: int) -> int:
    return int(await ctx.execute_activity(other, x))


def runtime(path: Path, clock: ManualClock) -> SqliteRuntime:
    rt = SqliteRuntime.open(path, clock=clock)
    rt.register_workflow(drifts)
    rt.register_workflow(steady)
    rt.register_activity(bump)
    rt.register_activity(other)
    CODE["runtime"] = rt
    return rt


def marked(path: Path, exec_id: str) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT needs_decision FROM harvest_executions WHERE exec_id = ?",
            (exec_id,),
        ).fetchone()
    finally:
        conn.close()
    return int(row[0])


@pytest.mark.parametrize("alone", [True, False])
async def test_a_decision_that_diverges_after_a_completion_leaves_the_run_marked(
    tmp_path: Path, clock: ManualClock, alone: bool
) -> None:
    path = tmp_path / "marks.db"
    CODE["second"] = "bump"
    rt = runtime(path, clock)
    try:
        exec_id = str(rt.start_workflow("drifts", 1))
        # Alone: one run's batch takes no savepoint, fails whole, runs again
        # with savepoints. Not alone: a second run shares the batch.
        company = None if alone else str(rt.start_workflow("steady", 10))
        drive = rt.run_until_blocked(exec_id) if alone else rt.run_until_idle()
        with pytest.raises(NonDeterminismDetected):
            await drive
        # The completion committed, the decision did not: still marked.
        types = [e.type for e in rt.load_history(exec_id)]
        assert types[-1] == "ActivityCompleted"
        assert marked(path, exec_id) == 1
        assert exec_id in rt.store.runs_needing_decision(clock.now())
        if company is not None:
            assert rt.describe(company).state == "COMPLETED"
            assert marked(path, company) == 0
        # The fixed deployment: a plain pass finds the run and finishes it.
        CODE["second"] = "bump"
        rt.cache.clear()
        await rt.run_until_idle()
        assert rt.describe(exec_id).state == "COMPLETED"
        assert marked(path, exec_id) == 0
    finally:
        CODE["second"] = "bump"
        rt.close()


async def test_a_run_decided_in_the_commit_of_its_completion_is_left_unmarked(
    tmp_path: Path, clock: ManualClock
) -> None:
    path = tmp_path / "plain.db"
    CODE["second"] = "done"  # no drift: `bump` leaves the code alone
    rt = runtime(path, clock)
    try:
        exec_id = str(rt.start_workflow("drifts", 5))
        rt._engine.decider.decide(exec_id, clock.now())  # the activity is scheduled
        assert marked(path, exec_id) == 0
        await rt.run_until_blocked(exec_id)
        assert rt.describe(exec_id).state == "COMPLETED"
        assert marked(path, exec_id) == 0
    finally:
        CODE["second"] = "bump"
        rt.close()


def a_parked_run(rt: SqliteRuntime, clock: ManualClock, path: Path) -> str:
    """A run whose decision scheduled its activity: its row is unmarked."""
    exec_id = str(rt.start_workflow("steady", 1))
    rt._engine.decider.decide(exec_id, clock.now())
    assert marked(path, exec_id) == 0
    return exec_id


def note(txn: Any, exec_id: str, clock: ManualClock) -> None:
    """What a completion writes: an event, with needs_decision = 1."""
    row = txn.execution(exec_id)
    event = HistoryEvent(
        seq=row.next_seq, type="MarkerRecorded", at=clock.now(), attrs={}
    )
    txn.append_events(exec_id, [event], needs_decision=1)


def failing_write(rt: SqliteRuntime, write: Callable[[Any], None]) -> None:
    """A joined write (a savepoint) that writes, then fails."""
    with rt.store.write() as joined:
        write(joined)
        raise LookupError("the joined write fails after writing")


def test_a_decision_write_rolled_back_by_its_savepoint_gives_the_mark_back(
    tmp_path: Path, clock: ManualClock
) -> None:
    path = tmp_path / "undo.db"
    rt = runtime(path, clock)
    try:
        exec_id = a_parked_run(rt, clock, path)
        with rt.store.write_together() as txn:
            note(txn, exec_id, clock)
            with pytest.raises(LookupError):
                failing_write(
                    rt,
                    lambda joined: joined.update_execution(
                        exec_id, needs_decision=0, panic_count=0
                    ),
                )
        assert marked(path, exec_id) == 1
    finally:
        rt.close()


def test_a_mark_made_in_a_savepoint_that_rolls_back_is_not_written(
    tmp_path: Path, clock: ManualClock
) -> None:
    path = tmp_path / "undo-mark.db"
    rt = runtime(path, clock)
    try:
        exec_id = a_parked_run(rt, clock, path)
        with rt.store.write_together() as txn:
            txn.update_execution(exec_id, panic_count=0)
            with pytest.raises(LookupError):
                failing_write(rt, lambda joined: note(joined, exec_id, clock))
        assert marked(path, exec_id) == 0
        assert [e.type for e in rt.load_history(exec_id)][-1] == "ActivityScheduled"
    finally:
        rt.close()
