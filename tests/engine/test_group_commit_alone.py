"""A batch of one run's work (its completion and its decision) takes no savepoint.

A savepoint lets one run's decision fail alone in a commit other runs
share; a run driven alone shares its commits with nobody, so its decision
skips the SAVEPOINT and RELEASE statements. If that decision fails, the
whole transaction rolls back and runs again with savepoints: the
completion still commits without the failed decision, as in any batch.
On SQLite (the only writer: no decision stands back for another worker) a
batch of many runs goes the same way, bare first, redone with savepoints.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityContext,
    ManualClock,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowPanicked,
    activity,
    workflow,
)
from harvest_engine.store.txn_protocol import JoinedWriteFailed

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.sqlite_only("traces SQLite's statements")

BUG = {"armed": True}


@activity
async def bump(ctx: ActivityContext, x: int) -> int:
    return x + 1


@workflow
async def two_bumps(ctx: WorkflowContext, x: int) -> int:
    for _ in range(2):
        x = await ctx.execute_activity(bump, x)
    return x


@workflow
async def bug_after_a_bump(ctx: WorkflowContext, x: int) -> int:
    x = await ctx.execute_activity(bump, x)
    if BUG["armed"]:
        raise KeyError("a bug once the activity is back")
    return x


def runtime(path: Path, clock: ManualClock, *, batched: bool = True) -> SqliteRuntime:
    rt = SqliteRuntime.open(path, clock=clock)
    rt.settings.group_commit = batched
    for wf in (two_bumps, bug_after_a_bump):
        rt.register_workflow(wf)
    rt.register_activity(bump)
    return rt


@contextmanager
def statements(rt: SqliteRuntime) -> Iterator[list[str]]:
    seen: list[str] = []
    conn = rt.store.connection  # type: ignore[attr-defined]
    conn.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        conn.set_trace_callback(None)


def stored(path: Path, exec_id: str) -> tuple[list[tuple[Any, ...]], ...]:
    """The run's events, attempts and panic count, as the file holds them."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        events = conn.execute(
            "SELECT seq, type, at, attrs FROM harvest_events WHERE exec_id = ? "
            "ORDER BY seq",
            (exec_id,),
        ).fetchall()
        attempts = conn.execute(
            "SELECT activity_id, attempt, outcome FROM harvest_activity_attempts "
            "WHERE exec_id = ? ORDER BY id",
            (exec_id,),
        ).fetchall()
        row = conn.execute(
            "SELECT state, panic_count, next_seq FROM harvest_executions "
            "WHERE exec_id = ?",
            (exec_id,),
        ).fetchall()
    finally:
        conn.close()
    return [(*e[:3], e[3].replace(exec_id, "<run>")) for e in events], attempts, row


async def test_a_run_driven_alone_commits_each_step_without_a_savepoint(
    tmp_path: Path, clock: ManualClock
) -> None:
    rt = runtime(tmp_path / "alone.db", clock)
    try:
        exec_id = rt.start_workflow("two_bumps", 1)
        with statements(rt) as seen:
            state = await rt.run_until_blocked(exec_id)
    finally:
        rt.close()
    assert state == RunState.Completed(output=3)
    assert seen.count("COMMIT") == 3
    assert not [sql for sql in seen if sql.startswith(("SAVEPOINT", "RELEASE"))]


async def test_a_decision_failing_after_its_completion_rolls_back_alone_as_with_savepoints(
    tmp_path: Path, clock: ManualClock
) -> None:
    BUG["armed"] = True
    files: dict[bool, tuple[Any, ...]] = {}
    try:
        for batched in (True, False):
            path = tmp_path / f"batched-{batched}.db"
            rt = runtime(path, clock, batched=batched)
            try:
                exec_id = rt.start_workflow("bug_after_a_bump", 1)
                with statements(rt) as seen, pytest.raises(WorkflowPanicked):
                    await rt.run_until_blocked(exec_id)
                if batched:
                    # The bare batch failed whole, then ran again with savepoints.
                    assert "ROLLBACK" in seen
                    assert any(sql.startswith("SAVEPOINT") for sql in seen)
                BUG["armed"] = False
                state = await rt.run_until_blocked(exec_id)
                BUG["armed"] = True
            finally:
                rt.close()
            assert state == RunState.Completed(output=2)
            files[batched] = stored(path, str(exec_id))
    finally:
        BUG["armed"] = True
    # The completion committed once, the panic was counted, and the history is
    # the one a transaction per step writes.
    assert files[True] == files[False]
    events, attempts, _ = files[True]
    assert [e[1] for e in events] == [
        "WorkflowStarted",
        "ActivityScheduled",
        "ActivityCompleted",
        "WorkflowCompleted",
    ]
    assert attempts == [(1, 1, "COMPLETED")]


def test_a_bare_batch_that_fails_whole_is_reported_as_a_request_to_redo(
    tmp_path: Path, clock: ManualClock
) -> None:
    rt = runtime(tmp_path / "redo.db", clock)
    store = rt.store
    exec_id = str(rt.start_workflow("two_bumps", 1))

    def batch() -> None:
        with store.write_together(savepoints=False):
            with store.write() as joined:
                joined.update_execution(exec_id, panic_count=7)
            with store.write():
                raise LookupError("the second joined write fails")

    try:
        with pytest.raises(JoinedWriteFailed):
            batch()
        # Nothing of the batch stayed, the joined write that succeeded included.
        assert store.execution(exec_id).panic_count == 0  # type: ignore[union-attr]
    finally:
        rt.close()


async def test_a_pass_over_many_runs_decides_them_without_savepoints_on_sqlite(
    tmp_path: Path, clock: ManualClock
) -> None:
    rt = runtime(tmp_path / "many.db", clock)
    try:
        runs = [rt.start_workflow("two_bumps", i) for i in range(4)]
        with statements(rt) as seen:
            for _ in range(10):
                await rt.poll_once()
        outputs = [rt.outcome(r).output for r in runs]
    finally:
        rt.close()
    assert outputs == [i + 2 for i in range(4)]
    # Each commit held several runs' decisions, none in a savepoint of its own.
    assert seen.count("COMMIT") < 3 * len(runs)
    assert not [sql for sql in seen if sql.startswith(("SAVEPOINT", "RELEASE"))]


async def test_a_failing_decision_in_a_many_run_batch_is_redone_with_savepoints(
    tmp_path: Path, clock: ManualClock
) -> None:
    BUG["armed"] = True
    rt = runtime(tmp_path / "redo-many.db", clock)
    try:
        good = [rt.start_workflow("two_bumps", i) for i in range(3)]
        bad = rt.start_workflow("bug_after_a_bump", 10)
        with statements(rt) as seen:
            for _ in range(10):
                with suppress(WorkflowPanicked):
                    await rt.poll_once()
        outputs = [rt.outcome(r).output for r in good]
        bad_row = rt.store.execution(str(bad))
    finally:
        rt.close()
        BUG["armed"] = True
    # The bare batch rolled back whole and ran again with savepoints: the good
    # runs' work committed, the failing decision alone was rolled back.
    assert "ROLLBACK" in seen
    assert any(sql.startswith("SAVEPOINT") for sql in seen)
    assert outputs == [i + 2 for i in range(3)]
    assert bad_row is not None
    assert bad_row.state == "RUNNING"
    assert bad_row.panic_count >= 1
