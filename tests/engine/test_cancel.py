"""Cancel (cooperative) and terminate (at once): every way a cancelled run ends (guide §7)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ExecutionNotFound,
    ExecutionOutcome,
    HistoryCaps,
    NonDeterminismDetected,
    RetryPolicy,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowNotRunning,
    WorkflowReplayer,
    activity,
    workflow,
)
from harvest_engine.runtime.deciding.cancel import (
    DEFAULT_CANCEL_REASON,
    DEFAULT_TERMINATE_REASON,
)

if TYPE_CHECKING:
    from tests.stores import OpenReader

Open = Callable[..., SqliteRuntime]


@activity
async def step(ctx: Any, value: Any) -> str:
    return f"step {value}"


@activity
async def cleanup(ctx: Any, reason: Any) -> str:
    return f"cleaned after {reason}"


@activity(retry=RetryPolicy(max_attempts=5, initial_interval="1h"))
async def flaky(ctx: Any, value: Any) -> str:
    raise ValueError("down")


@workflow
async def session(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.execute_activity(step, 1)
    if ctx.cancellation_reason() is not None:
        await ctx.execute_activity(cleanup, ctx.cancellation_reason())
        return "cleaned up"
    return await ctx.wait_for_signal("next")


@workflow
async def parked(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.execute_activity(step, 1)
    return await ctx.wait_for_signal("next")


@workflow
async def ignores_cancel(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.execute_activity(step, 1)
    return "finished anyway"


@workflow
async def busy(ctx: WorkflowContext, _: Any) -> Any:
    for _ in range(10):  # 3,000 events of work, whatever the cancel says
        await asyncio.gather(*(ctx.execute_activity(step, i) for i in range(150)))
    return "all done"


@workflow
async def waits_on_retry(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.execute_activity(flaky, 1)


@workflow
async def continues(ctx: WorkflowContext, n: int) -> Any:
    await ctx.execute_activity(step, n)
    ctx.continue_as_new(n + 1)


@workflow
async def cleanup_with_session(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.execute_activity(step, 1)
    if ctx.is_cancelled():
        await ctx.create_session()
    return await ctx.wait_for_signal("next")


WORKFLOWS = [
    session,
    parked,
    ignores_cancel,
    busy,
    waits_on_retry,
    continues,
    cleanup_with_session,
]


def runtime(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    for act in (step, cleanup, flaky):
        rt.register_activity(act)
    return rt


def types(rt: SqliteRuntime, exec_id: Any) -> list[str]:
    return [e.type for e in rt.load_history(exec_id)]


async def test_a_cancel_runs_cleanup_activities_and_ends_cancelled(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("session", None)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="next")
    history_before = len(rt.load_history(exec_id))

    rt.cancel(exec_id, "user stopped the session")

    assert (
        len(rt.load_history(exec_id)) == history_before
    )  # the request appends no event
    assert await rt.run_until_blocked(exec_id) == RunState.Cancelled(
        reason="user stopped the session"
    )
    assert rt.outcome(exec_id) == ExecutionOutcome.Terminated(state="CANCELLED")
    history = rt.load_history(exec_id)
    assert [e.type for e in history][-3:] == [
        "ActivityScheduled",
        "ActivityCompleted",
        "WorkflowCancelled",
    ]
    assert history[-3].attrs["name"] == "cleanup"
    assert history[-1].attrs == {"reason": "user stopped the session"}
    assert (
        rt.describe(exec_id).output.value is None
    )  # the body's "cleaned up" is not kept
    assert WorkflowReplayer(WORKFLOWS).replay(history).closed


async def test_a_blank_reason_gets_the_default_text(open_rt: Open) -> None:
    rt = runtime(open_rt)
    cancelled = rt.start_workflow("parked", None)
    terminated = rt.start_workflow("parked", None)
    await rt.run_until_idle()

    rt.cancel(cancelled, "  ")
    rt.terminate(terminated, "")

    assert await rt.run_until_blocked(cancelled) == RunState.Cancelled(
        reason=DEFAULT_CANCEL_REASON
    )
    assert await rt.run_until_blocked(terminated) == RunState.Terminated(
        reason=DEFAULT_TERMINATE_REASON
    )


async def test_a_repeat_cancel_keeps_the_first_reason(open_rt: Open) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("parked", None)
    await rt.run_until_blocked(exec_id)

    rt.cancel(exec_id, "first")
    rt.cancel(exec_id, "second")

    assert await rt.run_until_blocked(exec_id) == RunState.Cancelled(reason="first")


async def test_cancel_and_terminate_refuse_unknown_and_terminal_runs(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("ignores_cancel", None)
    await rt.run_until_blocked(exec_id)

    with pytest.raises(WorkflowNotRunning):
        rt.cancel(exec_id, "late")
    with pytest.raises(WorkflowNotRunning):
        rt.terminate(exec_id, "late")
    with pytest.raises(ExecutionNotFound):
        rt.cancel("no-such-run", "x")
    with pytest.raises(ExecutionNotFound):
        rt.terminate("no-such-run", "x")


@pytest.mark.parametrize("reason", [123, b"stop", ["stop"]])
async def test_a_reason_that_is_not_text_is_refused_and_changes_nothing(
    open_rt: Open, reason: Any
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("parked", None)
    await rt.run_until_blocked(exec_id)
    before = rt.load_history(exec_id)

    with pytest.raises(TypeError, match="reason is text or None"):
        rt.cancel(exec_id, reason)
    with pytest.raises(TypeError, match="reason is text or None"):
        rt.terminate(exec_id, reason)

    assert rt.load_history(exec_id) == before
    assert rt.describe(exec_id).state == "RUNNING"
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="next")


async def test_a_body_parked_on_a_signal_ends_cancelled_when_no_task_is_left(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("parked", None)
    await rt.run_until_blocked(exec_id)

    rt.cancel(exec_id, "stop")

    assert await rt.run_until_blocked(exec_id) == RunState.Cancelled(reason="stop")
    assert types(rt, exec_id)[-1] == "WorkflowCancelled"
    # The parked await never saw the request: strict replay reports it.
    with pytest.raises(NonDeterminismDetected):
        WorkflowReplayer(WORKFLOWS).replay(rt.load_history(exec_id))


async def test_a_body_that_returns_ends_cancelled_and_its_output_is_dropped(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("ignores_cancel", None)
    rt.cancel(exec_id, "never mind")

    assert await rt.run_until_blocked(exec_id) == RunState.Cancelled(
        reason="never mind"
    )
    assert "WorkflowCompleted" not in types(rt, exec_id)


async def test_a_continue_as_new_under_cancel_starts_no_successor(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("continues", 1)
    rt.cancel(exec_id, "stop the loop")

    assert await rt.run_until_blocked(exec_id) == RunState.Cancelled(
        reason="stop the loop"
    )
    assert rt.successor(exec_id) is None
    assert sum(rt.counts_by_state().values()) == 1


async def test_the_cancel_request_survives_a_reopen(
    open_rt: Open, db_path: Any
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("session", None)
    await rt.run_until_blocked(exec_id)
    rt.cancel(exec_id, "before the crash")
    rt.close()

    reopened = runtime(open_rt)

    assert await reopened.run_until_blocked(exec_id) == RunState.Cancelled(
        reason="before the crash"
    )
    assert "cleanup" in [e.attrs.get("name") for e in reopened.load_history(exec_id)]


async def test_an_error_that_repeats_on_every_drive_ends_the_cancelled_run(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("waits_on_retry", None)
    assert (
        await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    )  # flaky in backoff
    rt.close()
    reopened = open_rt()  # the workflow is not registered here: every drive fails
    reopened.register_activity(flaky)

    reopened.cancel(exec_id, "give up")

    assert await reopened.run_until_blocked(exec_id) == RunState.Cancelled(
        reason="give up"
    )
    failed = [e for e in reopened.load_history(exec_id) if e.type == "ActivityFailed"]
    assert failed[-1].attrs["error"]["type"] == "CancelSealed"
    assert failed[-1].attrs["error"]["non_retryable"] is True
    assert reopened.store.pending_tasks(str(exec_id)) == []


async def test_an_unregistered_activity_task_fails_with_unregistered_activity(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("waits_on_retry", None)
    await rt.run_until_blocked(exec_id)
    rt.close()
    reopened = open_rt()
    reopened.register_workflow(waits_on_retry)  # flaky is not registered here

    reopened.cancel(exec_id, "give up")

    assert await reopened.run_until_blocked(exec_id) == RunState.Cancelled(
        reason="give up"
    )
    failed = [e for e in reopened.load_history(exec_id) if e.type == "ActivityFailed"]
    assert failed[-1].attrs["error"]["type"] == "UnregisteredActivity"
    assert WorkflowReplayer(WORKFLOWS).replay(reopened.load_history(exec_id)).closed


async def test_a_pending_retry_still_runs_and_the_body_sees_the_cancel_when_it_resolves(
    open_rt: Open, clock: Any
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("waits_on_retry", None)
    await rt.run_until_blocked(exec_id)

    rt.cancel(exec_id, "stop")

    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    assert len(rt.store.pending_tasks(str(exec_id))) == 1


async def test_a_body_ignoring_the_cancel_ends_at_the_cleanup_budget(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("busy", None)
    requested_at = len(rt.load_history(exec_id))
    rt.cancel(exec_id, "enough")

    state = await rt.run_until_blocked(exec_id)

    assert state == RunState.Cancelled(reason="enough")
    history = rt.load_history(exec_id)
    assert history[-1].type == "WorkflowCancelled"
    assert len(history) - requested_at <= 1_000
    assert "WorkflowCompleted" not in [e.type for e in history]


async def test_a_cleanup_that_reaches_a_history_cap_ends_cancelled_not_failed(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    rt.set_history_caps(HistoryCaps(max_events=5))
    exec_id = rt.start_workflow("session", None)
    await rt.run_until_blocked(exec_id)

    rt.cancel(exec_id, "stop")

    assert await rt.run_until_blocked(exec_id) == RunState.Cancelled(reason="stop")
    assert types(rt, exec_id)[-1] == "WorkflowCancelled"


async def test_an_unsupported_command_during_cleanup_ends_failed(open_rt: Open) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("cleanup_with_session", None)
    await rt.run_until_blocked(exec_id)
    rt.cancel(exec_id, "stop")

    from harvest_engine import Unsupported

    with pytest.raises(Unsupported):
        await rt.run_until_blocked(exec_id)
    assert isinstance(rt.outcome(exec_id), ExecutionOutcome.Failed)


async def test_terminate_ends_the_run_at_once_and_keeps_keyed_signals(
    open_rt: Open, db_path: Any, open_reader: OpenReader
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("waits_on_retry", None)
    await rt.run_until_blocked(exec_id)
    rt.send_signal(exec_id, "plain", 1)
    rt.send_signal_idempotent(exec_id, "keyed", 2, "hook-1")
    rt.cancel(exec_id, "cooperative first")
    before = len(rt.load_history(exec_id))

    rt.terminate(exec_id, "stuck for an hour")

    history = rt.load_history(exec_id)
    assert len(history) == before + 1
    assert history[-1].type == "WorkflowCancelled"
    # Imposed: its body never saw a cancel request (replay shows it none).
    assert history[-1].attrs == {"reason": "stuck for an hour", "imposed": True}
    assert rt.outcome(exec_id) == ExecutionOutcome.Terminated(state="TERMINATED")
    assert await rt.run_until_blocked(exec_id) == RunState.Terminated(
        reason="stuck for an hour"
    )
    with open_reader() as reader:
        assert reader.pending_tasks(exec_id) == []
        assert reader.timers(exec_id) == []
    assert rt.send_signal_idempotent(exec_id, "keyed", 2, "hook-1") is False
    assert rt.store.execution(str(exec_id)).cancel_reason is None  # type: ignore[union-attr]
