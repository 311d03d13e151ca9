"""Local activities: LocalActivity* events, the 60 s attempt budget, backoff ends the cycle, solo rules."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from harvest_engine import (
    ActivityError,
    ManualClock,
    RetryPolicy,
    RunState,
    SqliteRuntime,
    Unsupported,
    WorkflowContext,
    WorkflowReplayer,
    activity,
    workflow,
)

Open = Callable[..., SqliteRuntime]
attempts: list[int] = []


@activity(local=True)
async def lookup(ctx: Any, key: str) -> str:
    return f"value of {key}"


@activity(local=True, retry=RetryPolicy(max_attempts=3, initial_interval="10s"))
async def shaky(ctx: Any, fail_times: int) -> str:
    attempts.append(ctx.info().attempt)
    if ctx.info().attempt <= fail_times:
        raise ValueError(f"attempt {ctx.info().attempt} failed")
    return f"ok on {ctx.info().attempt}"


@activity
async def remote(ctx: Any, value: Any) -> Any:
    return value


@workflow
async def uses_lookup(ctx: WorkflowContext, key: str) -> Any:
    return await ctx.execute_local_activity(lookup, key, start_to_close="5m")


@workflow
async def uses_shaky(ctx: WorkflowContext, fail_times: int) -> Any:
    try:
        return await ctx.execute_local_activity(shaky, fail_times)
    except ActivityError as exc:
        return f"gave up: {exc.message}"


@workflow
async def two_locals(ctx: WorkflowContext, _: Any) -> Any:
    return await asyncio.gather(
        ctx.execute_local_activity(lookup, "a"), ctx.execute_local_activity(lookup, "b")
    )


@workflow
async def local_beside_remote(ctx: WorkflowContext, _: Any) -> Any:
    return await asyncio.gather(
        ctx.execute_local_activity(lookup, "a"), ctx.execute_activity(remote, "b")
    )


@workflow(execution_timeout="10s")
async def slow_local(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.execute_local_activity("slow_body", None)


WORKFLOWS = [uses_lookup, uses_shaky, two_locals, local_beside_remote, slow_local]


def runtime(open_rt: Open) -> SqliteRuntime:
    attempts.clear()
    rt = open_rt()
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    for act in (lookup, shaky, remote):
        rt.register_activity(act)
    return rt


async def test_a_local_activity_records_scheduled_and_completed(open_rt: Open) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("uses_lookup", "k")

    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output="value of k"
    )
    history = rt.load_history(exec_id)
    assert [e.type for e in history] == [
        "WorkflowStarted",
        "LocalActivityScheduled",
        "LocalActivityCompleted",
        "WorkflowCompleted",
    ]
    assert history[1].attrs["start_to_close"] == 60.0  # "5m" is capped at 60 s
    assert WorkflowReplayer(WORKFLOWS).replay(history).closed


async def test_a_retry_backoff_ends_the_cycle_and_the_next_attempt_runs_after_it(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("uses_shaky", 1)

    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    assert attempts == [1]
    clock.advance("10s")

    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="ok on 2")
    types = [e.type for e in rt.load_history(exec_id)]
    assert types == [
        "WorkflowStarted",
        "LocalActivityScheduled",
        "LocalActivityFailed",
        "LocalActivityCompleted",
        "WorkflowCompleted",
    ]


async def test_a_crash_between_attempts_resumes_at_the_next_attempt(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("uses_shaky", 1)
    await rt.run_until_blocked(exec_id)
    rt.close()
    clock.advance("10s")

    reopened = runtime(open_rt)

    assert await reopened.run_until_blocked(exec_id) == RunState.Completed(
        output="ok on 2"
    )
    assert attempts == [2]


async def test_a_terminal_failure_appends_exhausted_and_fails_the_await(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("uses_shaky", 5)
    for _ in range(3):
        await rt.run_until_blocked(exec_id)
        clock.advance("1m")

    state = await rt.run_until_blocked(exec_id)

    assert state == RunState.Completed(output="gave up: attempt 3 failed")
    types = [e.type for e in rt.load_history(exec_id)]
    assert types.count("LocalActivityFailed") == 3
    assert types[-2] == "LocalActivityExhausted"
    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(exec_id)).closed


async def test_a_pending_cancel_skips_the_backoff(open_rt: Open) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("uses_shaky", 1)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()

    rt.cancel(exec_id, "hurry")

    assert await rt.run_until_blocked(exec_id) == RunState.Cancelled(reason="hurry")
    assert attempts == [1, 2]


@pytest.mark.parametrize("name", ["two_locals", "local_beside_remote"])
async def test_a_local_activity_must_be_alone_in_its_batch(
    open_rt: Open, name: str
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow(name, None)

    with pytest.raises(Unsupported, match="RunLocalActivity"):
        await rt.run_until_blocked(exec_id)

    assert rt.describe(exec_id).state == "FAILED"


async def test_an_attempt_ending_past_the_deadline_records_nothing_and_times_out(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)

    def slow_body(_: Any) -> str:
        clock.advance("20s")  # the attempt outlives the run's 10 s deadline
        return "too late"

    from harvest_engine import ActivitySpec

    rt.register_activity_raw("slow_body", ActivitySpec(max_attempts=1, body=slow_body))
    exec_id = rt.start_workflow("slow_local", None)

    state = await rt.run_until_blocked(exec_id)

    assert isinstance(state, RunState.TimedOut)
    assert "LocalActivityCompleted" not in [e.type for e in rt.load_history(exec_id)]


@workflow
async def handler_between_attempts(ctx: WorkflowContext, _: Any) -> Any:
    async def on_poke(_: Any) -> None:
        await ctx.execute_activity(remote, "from the handler")

    ctx.register_signal_handler("poke", on_poke)
    return await ctx.execute_local_activity(shaky, 1)


async def test_a_signal_handler_issuing_a_durable_command_between_attempts_fails_the_run(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    rt.register_workflow(handler_between_attempts)
    exec_id = rt.start_workflow("handler_between_attempts", None)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()  # in backoff

    rt.send_signal(exec_id, "poke", None)

    with pytest.raises(Unsupported, match="RunLocalActivity"):
        await rt.run_until_blocked(exec_id)
    assert rt.describe(exec_id).state == "FAILED"
