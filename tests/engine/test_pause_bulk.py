"""Pause and unpause, and the bulk calls by filter, on both stores."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harvest_engine import (
    ExecutionFilter,
    ExecutionNotFound,
    RetryPolicy,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowNotRunning,
    WorkflowReplayer,
    activity,
    workflow,
)

Open = Callable[..., SqliteRuntime]

RAN: list[str] = []
HOOK: dict[str, Callable[[], None]] = {}


@activity
async def step(ctx: Any, name: str) -> str:
    RAN.append(name)
    hook = HOOK.pop(name, None)
    if hook is not None:
        hook()  # the run is paused while this body runs
    return name


@activity(retry=RetryPolicy(max_attempts=3, initial_interval="10s"))
async def flaky(ctx: Any, name: str) -> str:
    RAN.append(name)
    hook = HOOK.pop(name, None)
    if hook is not None:
        hook()
    raise ValueError("down")


@workflow
async def chores(ctx: WorkflowContext, _: Any) -> list[Any]:
    first = await ctx.execute_activity(step, "first")
    await ctx.sleep(60)
    got = await ctx.wait_for_signal("go")
    last = await ctx.execute_activity(step, "last")
    return [first, got, last]


@workflow
async def parked(ctx: WorkflowContext, _: Any) -> Any:
    notes: list[Any] = []

    async def note(arg: Any) -> int:
        notes.append(arg)
        return len(notes)

    ctx.register_update_handler("note", None, note)
    return await ctx.wait_for_signal("go")


@workflow
async def retries(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.execute_activity(flaky, "flaky")


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RAN.clear()
    HOOK.clear()


def runtime(open_rt: Open) -> SqliteRuntime:
    rt: SqliteRuntime = open_rt()
    for wf in (chores, parked, retries):
        rt.register_workflow(wf)
    rt.register_activity(step)
    rt.register_activity(flaky)
    return rt


def types(rt: SqliteRuntime, exec_id: Any) -> list[str]:
    return [e.type for e in rt.load_history(exec_id)]


async def test_a_paused_run_takes_no_decision_and_what_came_meanwhile_applies_at_unpause(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("chores", None)
    rt.pause(exec_id, "checking the data")

    assert await rt.run_until_blocked(exec_id) == RunState.InProgress()
    assert not await rt.poll_once()
    assert types(rt, exec_id) == ["WorkflowStarted"]
    assert RAN == []
    assert rt.next_wakeup() is None  # nothing is due for a paused run
    detail = rt.describe(exec_id)
    assert (detail.paused, detail.pause_reason) == (True, "checking the data")
    listed = rt.list_executions(ExecutionFilter().paused()).executions
    assert [r.exec_id for r in listed] == [exec_id]
    assert rt.list_executions(ExecutionFilter().paused(flag=False)).executions == []

    rt.unpause(exec_id)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    assert RAN == ["first"]

    rt.pause(exec_id, "again")
    rt.clock.advance(120)  # type: ignore[attr-defined]
    rt.send_signal(exec_id, "go", "now")
    before = types(rt, exec_id)
    await rt.run_until_idle()
    assert types(rt, exec_id) == before  # the timer and the signal wait
    assert rt.next_wakeup() is None

    rt.unpause(exec_id)
    assert not rt.describe(exec_id).paused
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output=["first", "now", "last"]
    )


async def test_a_running_body_finishes_and_records_but_nothing_follows_while_paused(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("chores", None)
    HOOK["first"] = lambda: rt.pause(exec_id, "mid-body")

    await rt.run_until_idle()

    assert types(rt, exec_id) == [
        "WorkflowStarted",
        "ActivityScheduled",
        "ActivityCompleted",  # recorded, but no decision took it in
    ]
    rt.unpause(exec_id)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    assert types(rt, exec_id)[-1] == "TimerStarted"


async def test_a_paused_run_starts_no_new_attempt(open_rt: Open) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("retries", None)
    HOOK["flaky"] = lambda: rt.pause(exec_id, "stop retrying")
    await rt.run_until_idle()
    assert RAN == ["flaky"]

    rt.clock.advance(60)  # type: ignore[attr-defined]  # past the retry's backoff
    await rt.run_until_idle()
    assert RAN == ["flaky"]

    rt.unpause(exec_id)
    await rt.run_until_idle()
    assert RAN == ["flaky", "flaky"]


async def test_an_update_to_a_paused_run_is_answered_and_the_body_meets_it_at_unpause(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("parked", None)
    await rt.run_until_blocked(exec_id)
    rt.pause(exec_id, "frozen")
    before = types(rt, exec_id)

    assert await rt.update(exec_id, "note", 1) == 1

    assert types(rt, exec_id) == [*before, "UpdateAdmitted", "UpdateCompleted"]
    assert await rt.run_until_blocked(exec_id) == RunState.InProgress()  # still paused
    assert types(rt, exec_id) == [*before, "UpdateAdmitted", "UpdateCompleted"]
    rt.unpause(exec_id)
    await rt.run_until_blocked(exec_id)
    WorkflowReplayer([parked]).replay(rt.load_history(exec_id))


async def test_pausing_a_closed_or_unknown_run_is_refused(open_rt: Open) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("parked", None)
    rt.terminate(exec_id, "done")
    with pytest.raises(WorkflowNotRunning):
        rt.pause(exec_id, "x")
    with pytest.raises(WorkflowNotRunning):
        rt.unpause(exec_id)
    with pytest.raises(ExecutionNotFound):
        rt.pause("no-such-run", "x")
    with pytest.raises(TypeError):
        rt.pause(exec_id, 3)  # type: ignore[arg-type]
    assert not rt.describe(exec_id).paused


async def test_bulk_calls_act_on_what_the_filter_matches_and_a_repeat_changes_nothing(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    shop = [rt.start_workflow_with_id("parked", f"shop-{i}", None) for i in range(3)]
    other = rt.start_workflow_with_id("parked", "other", None)
    await rt.run_until_idle()
    by_prefix = ExecutionFilter().workflow_id_prefix("shop-")

    assert rt.pause_many(by_prefix, "maintenance") == 3
    assert rt.pause_many(by_prefix, "maintenance") == 0
    assert {
        r.exec_id for r in rt.list_executions(ExecutionFilter().paused()).executions
    } == set(shop)
    assert rt.counts_by_state()["RUNNING"] == 4
    assert rt.unpause_many(ExecutionFilter().paused()) == 3
    assert rt.unpause_many(ExecutionFilter().paused()) == 0

    assert rt.signal_many(by_prefix, "go", "ok") == 3
    assert rt.signal_many(by_prefix, "go", "ok") == 0  # a repeat stages nothing twice
    await rt.run_until_idle()
    assert {rt.describe(e).output.value for e in shop} == {"ok"}
    assert [len(rt.load_history(e)) for e in shop] == [3, 3, 3]

    nothing = ExecutionFilter().workflow_name("no-such-workflow")
    assert rt.cancel_many(nothing, "x") == 0
    assert rt.cancel_many(ExecutionFilter().workflow_id("other"), "stop") == 1
    assert rt.cancel_many(ExecutionFilter().workflow_id("other"), "stop") == 0
    assert rt.terminate_many(ExecutionFilter().state("RUNNING"), "end") == 1
    assert rt.terminate_many(ExecutionFilter().state("RUNNING"), "end") == 0
    assert rt.describe(other).state == "TERMINATED"

    failed = [rt.start_workflow("retries", None) for _ in range(2)]
    for _ in range(4):
        rt.clock.advance(60)  # type: ignore[attr-defined]
        await rt.run_until_idle()
    assert {rt.describe(e).state for e in failed} == {"FAILED"}
    assert rt.reset_many(ExecutionFilter().state("FAILED"), reason="retry all") == 2
    assert rt.reset_many(ExecutionFilter().state("FAILED"), reason="retry all") == 0
    assert all(rt.describe(e).reset_to is not None for e in failed)
    with pytest.raises(TypeError):
        rt.pause_many(by_prefix, 5)  # type: ignore[arg-type]
