"""WriteTxn row writes on both stores: events and the row's flags in one append, tasks gone or rescheduled."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from harvest_engine import (
    ActivityContext,
    ApplicationError,
    RetryPolicy,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.events import HistoryEvent
from harvest_engine.runtime.deciding.runs import start_run
from harvest_engine.store.rows import NewExecution, NewTask

Open = Callable[..., SqliteRuntime]

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def new_run(rt: SqliteRuntime, exec_id: str) -> None:
    with rt.store.write() as txn:
        start_run(
            txn,
            NewExecution(
                exec_id=exec_id, workflow_name="wf", workflow_id=exec_id, input="1"
            ),
            NOW,
        )


def test_an_append_sets_the_rows_other_columns_with_its_events(open_rt: Open) -> None:
    rt = open_rt()
    new_run(rt, "r1")
    later = NOW + timedelta(seconds=5)
    with rt.store.write() as txn:
        txn.update_execution("r1", panic_count=2, not_before=later)
        txn.append_events(
            "r1",
            [
                HistoryEvent(seq=2, type="MarkerRecorded", at=NOW, attrs={"a": 1}),
                HistoryEvent(seq=3, type="MarkerRecorded", at=NOW, attrs={"b": 2}),
            ],
            panic_count=0,
            not_before=None,
        )
    row = rt.store.execution("r1")
    assert row is not None
    assert (row.next_seq, row.panic_count, row.not_before) == (4, 0, None)
    assert [e.seq for e in rt.store.load_events("r1")] == [1, 2, 3]


def test_an_append_of_no_events_still_sets_the_columns(open_rt: Open) -> None:
    rt = open_rt()
    new_run(rt, "r1")
    with rt.store.write() as txn:
        txn.append_events("r1", [], panic_count=3)
    row = rt.store.execution("r1")
    assert row is not None
    assert (row.next_seq, row.panic_count) == (2, 3)


TERMINATE: list[Callable[[], None]] = []


@activity
async def ends_its_run(ctx: ActivityContext, x: int) -> int:
    TERMINATE.pop()()  # the run is terminated while this body runs
    return x + 1


@activity(retry=RetryPolicy(max_attempts=3, initial_interval="1s"))
async def fails_as_its_run_ends(ctx: ActivityContext, x: int) -> int:
    TERMINATE.pop()()
    raise ApplicationError("again", type="Flaky")


@workflow
async def one_call(ctx: WorkflowContext, name: str) -> int:
    fn = ends_its_run if name == "complete" else fails_as_its_run_ends
    return int(await ctx.execute_activity(fn, 1))


@pytest.mark.parametrize("outcome", ["complete", "retry"])
async def test_an_attempt_whose_run_was_terminated_while_it_ran_records_nothing(
    open_rt: Open, outcome: str
) -> None:
    rt = open_rt()
    rt.register_workflow(one_call)
    rt.register_activity(ends_its_run)
    rt.register_activity(fails_as_its_run_ends)
    exec_id = rt.start_workflow("one_call", outcome)
    TERMINATE.append(lambda: rt.terminate(exec_id, "stop"))
    state = await rt.run_until_blocked(exec_id)
    assert isinstance(state, RunState.Terminated)
    history = rt.load_history(exec_id)
    assert [e.type for e in history][-2:] == ["ActivityScheduled", "WorkflowCancelled"]
    assert rt.activity_attempts(exec_id, None) == []
    assert rt.store.pending_tasks(str(exec_id)) == []


def test_a_task_inserted_claimed_is_returned_as_its_row_reads(open_rt: Open) -> None:
    rt = open_rt()
    new_run(rt, "r1")
    task = NewTask(
        exec_id="r1",
        activity_id=1,
        activity_name="act",
        input='{"x":1}',
        queue="q",
        max_attempts=3,
        ready_at=NOW + timedelta(microseconds=3),
        retry_policy='{"max_attempts":3}',
        start_to_close=5,
        schedule_to_close_at=NOW + timedelta(seconds=9),
        idempotency_key="r1:1",
    )
    with rt.store.write() as txn:
        claimed = txn.add_claimed_task(task, NOW)
        assert claimed == txn.task(claimed.id)
    assert claimed.status == "RUNNING"
    assert claimed.start_to_close == 5.0
    assert isinstance(claimed.start_to_close, float)
