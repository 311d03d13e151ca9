"""Execution timeout (TIMED_OUT, ctx.deadline) and workflow retry (WorkflowRetryScheduled)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from harvest_engine import (
    ApplicationError,
    ExecutionOutcome,
    HistoryCaps,
    ManualClock,
    RetryPolicy,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowNotRunning,
    WorkflowPanicked,
    WorkflowReplayer,
    activity,
    workflow,
)

Open = Callable[..., SqliteRuntime]


@workflow(execution_timeout="30s")
async def bounded(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.wait_for_signal("go")
    return ctx.deadline().isoformat() if ctx.deadline() else None


@workflow(
    retry=RetryPolicy(
        max_attempts=3, initial_interval="5s", non_retryable_error_types=["Fatal"]
    )
)
async def flaky_flow(ctx: WorkflowContext, plan: dict[str, Any]) -> Any:
    attempt = ctx.info().attempt
    # Attempt n reads n notes: a retry gets the failed run's notes again.
    received = [
        await ctx.wait_for_signal("note") for _ in range(plan.get("notes", 0) * attempt)
    ]
    if attempt < plan["succeed_on"]:
        raise ApplicationError(
            f"attempt {attempt} failed", type=plan.get("type", "Flaky")
        )
    return {
        "attempt": attempt,
        "notes": received,
        "workflow_id": ctx.info().workflow_id,
    }


@workflow(retry=RetryPolicy(max_attempts=3, initial_interval="5s"))
async def buggy_flow(ctx: WorkflowContext, _: Any) -> Any:
    raise KeyError("a bug, not a failure")


@workflow(execution_timeout="10s", retry=RetryPolicy(max_attempts=3))
async def bounded_retry(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.wait_for_signal("go")


SLOW_CLOCK: list[ManualClock] = []


@activity
def slow_step(_info: Any, _: Any) -> str:
    """Takes 40 seconds of the runtime clock."""
    SLOW_CLOCK[0].advance("40s")
    return "late"


@workflow(execution_timeout="30s")
async def bounded_activity(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.execute_activity(slow_step, None)


@workflow(execution_timeout="30s")
async def bounded_nap(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.timer("10s")
    return "woke"


@workflow(execution_timeout="30s")
async def bounded_chain(ctx: WorkflowContext, step: int) -> Any:
    await ctx.timer("20s")
    if step == 0:
        ctx.continue_as_new(1)
    return str(ctx.deadline())


@workflow(
    execution_timeout="30s", retry=RetryPolicy(max_attempts=2, initial_interval="20s")
)
async def bounded_flaky(ctx: WorkflowContext, _: Any) -> Any:
    if ctx.info().attempt == 1:
        raise ApplicationError("first attempt fails", type="Flaky")
    return str(ctx.deadline())


@workflow(execution_timeout="30s")
async def bounded_updatable(ctx: WorkflowContext, _: Any) -> Any:
    async def bump(value: Any) -> Any:
        return value

    ctx.register_update_handler("bump", None, bump)
    await ctx.wait_for_signal("never")


@workflow(retry=RetryPolicy(max_attempts=3, initial_interval="1s"))
async def flaky_child(ctx: WorkflowContext, _: Any) -> Any:
    if ctx.info().attempt < 2:
        raise ApplicationError("child attempt 1 fails", type="Flaky")
    return f"child ok on attempt {ctx.info().attempt}"


@workflow
async def patient_parent(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.spawn_child_workflow("flaky_child", None)


@workflow(retry=RetryPolicy(max_attempts=2, initial_interval="5s"))
async def flaky_loop(ctx: WorkflowContext, step: int) -> Any:
    if step == 0:
        ctx.continue_as_new(1)
    if ctx.info().attempt == 1:
        raise ApplicationError("the successor's first attempt fails", type="Flaky")
    return {"step": step, "attempt": ctx.info().attempt}


WORKFLOWS = [
    bounded,
    flaky_flow,
    buggy_flow,
    bounded_retry,
    bounded_activity,
    bounded_nap,
    bounded_chain,
    bounded_flaky,
    bounded_updatable,
    flaky_child,
    patient_parent,
    flaky_loop,
]


def runtime(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    rt.register_activity(slow_step)
    return rt


async def test_a_run_past_its_deadline_times_out_at_its_next_drive(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("bounded", None)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="go")
    assert rt.describe(exec_id).state == "RUNNING"
    clock.advance("30s")

    state = await rt.run_until_blocked(exec_id)

    assert isinstance(state, RunState.TimedOut)
    assert str(state.error) == "timeout: WorkflowExecution for bounded"
    assert rt.load_history(exec_id)[-1].type == "WorkflowExecutionTimedOut"
    assert rt.outcome(exec_id) == ExecutionOutcome.Terminated(state="TIMED_OUT")
    with pytest.raises(WorkflowNotRunning):
        rt.send_signal(exec_id, "go", None)
    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(exec_id)).closed


async def test_ctx_deadline_reports_the_start_plus_the_timeout(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    started = clock.now()
    exec_id = rt.start_workflow("bounded", None)
    await rt.run_until_blocked(exec_id)
    rt.send_signal(exec_id, "go", None)

    state = await rt.run_until_blocked(exec_id)

    assert state == RunState.Completed(
        output=(started + timedelta(seconds=30)).isoformat()
    )


async def test_a_retryable_failure_starts_the_next_attempt_after_its_backoff(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    first = rt.start_workflow("flaky_flow", {"succeed_on": 2, "notes": 1})
    rt.send_signal(first, "note", "hello")

    state = await rt.run_until_blocked(first)

    assert isinstance(state, RunState.Failed)
    history = rt.load_history(first)
    assert [e.type for e in history][-2:] == [
        "WorkflowFailed",
        "WorkflowRetryScheduled",
    ]
    retry = rt.successor(first)
    assert retry is not None
    assert history[-1].attrs == {"successor": str(retry), "attempt": 2, "backoff": 5.0}
    assert await rt.run_until_blocked(retry) == RunState.WaitingTimer()
    clock.advance("5s")
    rt.send_signal(retry, "note", "again")

    done = await rt.run_until_blocked(retry)

    assert done == RunState.Completed(
        output={"attempt": 2, "notes": ["hello", "again"], "workflow_id": str(retry)}
    )
    assert rt.describe(retry).attempt == 2
    assert WorkflowReplayer(WORKFLOWS).replay(history).closed


async def test_a_continue_as_new_successor_keeps_the_frozen_retry_policy(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    first = rt.start_workflow("flaky_loop", 0)
    state = await rt.run_until_blocked(first)
    assert isinstance(state, RunState.ContinuedAsNew)
    successor = state.next

    failed = await rt.run_until_blocked(successor)

    assert isinstance(failed, RunState.Failed)
    retry = rt.successor(successor)
    assert retry is not None
    assert [e.type for e in rt.load_history(successor)][-2:] == [
        "WorkflowFailed",
        "WorkflowRetryScheduled",
    ]
    assert await rt.run_until_blocked(retry) == RunState.WaitingTimer()
    clock.advance("5s")
    assert await rt.run_until_blocked(retry) == RunState.Completed(
        output={"step": 1, "attempt": 2}
    )


async def test_a_cancel_during_the_retry_backoff_ends_the_retry_without_waiting(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    first = rt.start_workflow("flaky_flow", {"succeed_on": 2, "notes": 1})
    rt.send_signal(first, "note", "hello")
    await rt.run_until_blocked(first)
    retry = rt.successor(first)
    assert retry is not None
    assert await rt.run_until_blocked(retry) == RunState.WaitingTimer()

    rt.cancel(retry, "not needed any more")
    await rt.run_until_idle()

    assert rt.outcome(retry) == ExecutionOutcome.Terminated(state="CANCELLED")
    assert await rt.run_until_blocked(retry) == RunState.Cancelled(
        reason="not needed any more"
    )
    assert rt.successor(retry) is None


async def test_the_attempts_stop_at_max_attempts(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    run = rt.start_workflow("flaky_flow", {"succeed_on": 99})
    chain = [run]
    for _ in range(5):
        clock.advance("1m")
        await rt.run_until_idle()
    while (nxt := rt.successor(chain[-1])) is not None:
        chain.append(nxt)

    assert len(chain) == 3
    assert all(rt.describe(r).state == "FAILED" for r in chain)


@pytest.mark.parametrize(
    "case", ["non_retryable_type", "panic", "timeout", "cancel", "cap"]
)
async def test_these_failures_never_retry(
    open_rt: Open, clock: ManualClock, case: str
) -> None:
    rt = runtime(open_rt)
    if case == "non_retryable_type":
        exec_id = rt.start_workflow("flaky_flow", {"succeed_on": 9, "type": "Fatal"})
        await rt.run_until_blocked(exec_id)
    elif case == "panic":
        exec_id = rt.start_workflow("buggy_flow", None)
        for _ in range(2):
            with pytest.raises(WorkflowPanicked):
                await rt.run_until_blocked(exec_id)
        assert isinstance(await rt.run_until_blocked(exec_id), RunState.Failed)
    elif case == "timeout":
        exec_id = rt.start_workflow("bounded_retry", None)
        await rt.run_until_blocked(exec_id)
        clock.advance("10s")
        assert isinstance(await rt.run_until_blocked(exec_id), RunState.TimedOut)
    elif case == "cancel":
        exec_id = rt.start_workflow("bounded_retry", None)
        rt.cancel(exec_id, "no")
        assert isinstance(await rt.run_until_blocked(exec_id), RunState.Cancelled)
    else:
        rt.set_history_caps(HistoryCaps(max_events=2))
        exec_id = rt.start_workflow("flaky_flow", {"succeed_on": 9, "notes": 1})
        rt.send_signal(exec_id, "note", "one too many")
        state = await rt.run_until_blocked(exec_id)
        assert isinstance(state, RunState.Failed)
        assert state.error.type == "HistoryCapReached"

    assert rt.successor(exec_id) is None
    assert sum(rt.counts_by_state().values()) == 1


async def test_a_deadline_passed_while_the_body_ran_times_the_run_out(
    open_rt: Open, clock: ManualClock
) -> None:
    SLOW_CLOCK[:] = [clock]
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("bounded_activity", None)

    state = await rt.run_until_blocked(
        exec_id
    )  # the activity ends 40s in: checked after the body

    assert isinstance(state, RunState.TimedOut)
    types = [e.type for e in rt.load_history(exec_id)]
    assert types[-1] == "WorkflowExecutionTimedOut"
    assert "WorkflowCompleted" not in types


async def test_a_timer_due_before_the_deadline_is_lost_without_a_drive_in_between(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("bounded_nap", None)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    clock.advance("40s")  # the 10s timer came due, but nothing drove the run before 30s

    assert isinstance(await rt.run_until_blocked(exec_id), RunState.TimedOut)
    assert "TimerFired" not in [e.type for e in rt.load_history(exec_id)]
    assert rt.store.timers(str(exec_id)) == []


async def test_a_continue_as_new_successor_counts_its_own_deadline(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    first = rt.start_workflow("bounded_chain", 0)
    await rt.run_until_blocked(first)
    clock.advance("20s")
    state = await rt.run_until_blocked(first)
    assert isinstance(state, RunState.ContinuedAsNew)
    successor_start = clock.now()
    # Its timer counts from its first drive (guide §7).
    assert await rt.run_until_blocked(state.next) == RunState.WaitingTimer()
    clock.advance(
        "20s"
    )  # 40s after the first start: only the successor's own deadline counts

    done = await rt.run_until_blocked(state.next)

    assert done == RunState.Completed(
        output=str(successor_start + timedelta(seconds=30))
    )


async def test_a_retry_counts_its_own_deadline(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    first = rt.start_workflow("bounded_flaky", None)
    assert isinstance(await rt.run_until_blocked(first), RunState.Failed)
    retry = rt.successor(first)
    assert retry is not None
    clock.advance(
        "20s"
    )  # the backoff; a deadline from the first start would have 10s left

    done = await rt.run_until_blocked(retry)

    assert done == RunState.Completed(
        output=str(clock.now() - timedelta(seconds=20) + timedelta(seconds=30))
    )


async def test_an_update_after_the_deadline_gets_workflow_not_running(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("bounded_updatable", None)
    await rt.run_until_blocked(exec_id)
    assert await rt.update(exec_id, "bump", 1) == 1
    clock.advance("30s")

    with pytest.raises(WorkflowNotRunning):
        await rt.update(exec_id, "bump", 2)
    with pytest.raises(WorkflowNotRunning):
        rt.send_signal(exec_id, "never", None)


async def test_a_child_with_its_own_retry_policy_hands_the_parent_the_retry_result(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    parent = rt.start_workflow("patient_parent", None)
    assert isinstance(await rt.run_until_blocked(parent), RunState.WaitingWorkflow)
    clock.advance("1s")

    done = await rt.run_until_blocked(parent)

    assert done == RunState.Completed(output="child ok on attempt 2")
    types = [e.type for e in rt.load_history(parent)]
    assert types == [
        "WorkflowStarted",
        "ChildWorkflowStarted",
        "ChildWorkflowCompleted",
        "WorkflowCompleted",
    ]
    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(parent)).closed
