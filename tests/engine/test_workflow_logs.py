"""ctx.log: stored once per line under a log policy, capped with one marker, read by the reader."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityContext,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowLogPolicy,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from pathlib import Path

    from tests.stores import OpenReader

Open = Callable[..., SqliteRuntime]


@activity
async def work(ctx: ActivityContext, n: int) -> int:
    return n


@workflow
async def chatty(ctx: WorkflowContext, n: int) -> str:
    for i in range(n):
        ctx.log(f"line {i}")
        await ctx.execute_activity(work, i)
    return "done"


def runtime(
    open_rt: Open, policy: WorkflowLogPolicy | None, cache: bool = True
) -> SqliteRuntime:
    rt = open_rt()
    rt.register_workflow(chatty)
    rt.register_activity(work)
    rt.set_workflow_log_policy(policy)
    if not cache:
        rt.cache.capacity = 0
    return rt


async def test_each_log_line_is_stored_once_even_when_cycles_replay(
    open_rt: Open, db_path: Path, open_reader: OpenReader
) -> None:
    rt = runtime(open_rt, WorkflowLogPolicy(max_lines=None), cache=False)
    exec_id = rt.start_workflow("chatty", 4)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="done")
    with open_reader() as reader:
        lines = reader.workflow_logs(exec_id)
        assert [line.message for line in lines] == [f"line {i}" for i in range(4)]
        assert reader.count_workflow_logs(exec_id) == 4
        assert not reader.workflow_log_truncated(exec_id)


async def test_lines_past_max_lines_leave_one_truncation_marker(
    open_rt: Open, db_path: Path, open_reader: OpenReader
) -> None:
    rt = runtime(open_rt, WorkflowLogPolicy(max_lines=2))
    exec_id = rt.start_workflow("chatty", 5)
    await rt.run_until_blocked(exec_id)
    with open_reader() as reader:
        assert reader.count_workflow_logs(exec_id) == 2
        assert reader.workflow_log_truncated(exec_id)
        markers = [line for line in reader.workflow_logs(exec_id) if line.marker]
        assert len(markers) == 1


async def test_without_a_policy_no_lines_are_stored(
    open_rt: Open, db_path: Path, open_reader: OpenReader
) -> None:
    rt = runtime(open_rt, None)
    exec_id = rt.start_workflow("chatty", 2)
    await rt.run_until_blocked(exec_id)
    with open_reader() as reader:
        assert reader.workflow_logs(exec_id) == []


async def test_lines_logged_before_a_reopen_are_not_stored_twice(
    open_rt: Open, db_path: Path, open_reader: OpenReader
) -> None:
    @workflow(name="chatty")
    async def waits(ctx: WorkflowContext, _: Any) -> str:
        ctx.log("before")
        await ctx.wait_for_signal("go")
        ctx.log("after")
        return "ok"

    first = open_rt()
    first.register_workflow(waits)
    first.set_workflow_log_policy(WorkflowLogPolicy())
    exec_id = first.start_workflow("chatty", None)
    await first.run_until_blocked(exec_id)
    first.close()
    second = open_rt()
    second.register_workflow(waits)
    second.set_workflow_log_policy(WorkflowLogPolicy())
    second.send_signal(exec_id, "go", 1)
    await second.run_until_blocked(exec_id)
    with open_reader() as reader:
        assert [line.message for line in reader.workflow_logs(exec_id)] == [
            "before",
            "after",
        ]


@pytest.mark.sqlite_only("injects the failure with a SQLite TEMP TRIGGER")
async def test_a_failed_log_write_rolls_back_alone_and_the_cycle_commits(
    open_rt: Open, db_path: Path, open_reader: OpenReader
) -> None:
    rt = runtime(open_rt, WorkflowLogPolicy(), cache=False)
    # A temp trigger lives in this connection only: the file's schema stays.
    rt.store.connection.execute(  # type: ignore[attr-defined]
        "CREATE TEMP TRIGGER refuse_line_two BEFORE INSERT ON main.harvest_workflow_logs "
        "WHEN NEW.message = 'line 2' BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
    )
    exec_id = rt.start_workflow("chatty", 4)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="done")
    with open_reader() as reader:
        # Each cycle after the refusal writes its lines as one batch; the
        # batch holding "line 2" rolls back to its savepoint every time.
        assert [line.message for line in reader.workflow_logs(exec_id)] == [
            "line 0",
            "line 1",
        ]
        assert [e.type for e in reader.load_history(exec_id)][-1] == "WorkflowCompleted"
