"""Workflow mutexes: queue, fencing lock_seq, WaitingMutex, release on every ending, solo rules."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ApplicationError,
    ExecutionOutcome,
    RunState,
    SqliteRuntime,
    Unsupported,
    WorkflowContext,
    WorkflowReplayer,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from tests.stores import OpenReader

Open = Callable[..., SqliteRuntime]


@activity
async def write(ctx: Any, lock_seq: int) -> int:
    return lock_seq


@workflow
async def holder(ctx: WorkflowContext, key: str) -> Any:
    async with ctx.mutex(key) as guard:
        await ctx.execute_activity(write, guard.lock_seq)
        await ctx.wait_for_signal("go")
    return guard.lock_seq


@workflow
async def fails_holding(ctx: WorkflowContext, key: str) -> Any:
    guard = await ctx.mutex(key).acquire()
    await ctx.wait_for_signal("go")
    raise ApplicationError(f"gave up with {guard.lock_seq}", non_retryable=True)


@workflow
async def acquire_beside_activity(ctx: WorkflowContext, key: str) -> Any:
    await asyncio.gather(ctx.mutex(key).acquire(), ctx.execute_activity(write, 0))


@workflow
async def acquire_beside_timer(ctx: WorkflowContext, key: str) -> Any:
    handle = ctx.start_timer("t", "1m")
    await ctx.sleep("1s")
    await asyncio.gather(ctx.mutex(key).acquire(), handle.await_fire())


@workflow(execution_timeout="30s")
async def times_out_holding(ctx: WorkflowContext, key: str) -> Any:
    await ctx.mutex(key).acquire()
    await ctx.wait_for_signal("go")


@workflow
async def continues_holding(ctx: WorkflowContext, key: str | None) -> Any:
    if key is None:
        return await ctx.wait_for_signal("go")
    await ctx.mutex(key).acquire()
    await ctx.wait_for_signal("go")
    ctx.continue_as_new(None)


@workflow
async def cancels_run(ctx: WorkflowContext, target: str) -> Any:
    await ctx.request_cancel_external_workflow(target)
    return "sealed"


WORKFLOWS = [
    holder,
    fails_holding,
    acquire_beside_activity,
    acquire_beside_timer,
    times_out_holding,
    continues_holding,
    cancels_run,
]


def runtime(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    rt.register_activity(write)
    return rt


async def test_the_second_run_waits_and_gets_the_key_with_a_higher_lock_seq(
    open_rt: Open, db_path: Any, open_reader: OpenReader
) -> None:
    rt = runtime(open_rt)
    first = rt.start_workflow("holder", "printer")
    second = rt.start_workflow("holder", "printer")

    assert await rt.run_until_blocked(first) == RunState.WaitingSignal(name="go")
    assert await rt.run_until_blocked(second) == RunState.WaitingMutex(key="printer")
    with open_reader() as reader:
        assert [m.key for m in reader.mutexes(str(second))] == ["printer"]

    rt.send_signal(first, "go", None)
    await (
        rt.run_until_idle()
    )  # the release is progress: the waiter runs in the same call

    assert rt.outcome(first) == ExecutionOutcome.Completed(output=1)
    assert await rt.run_until_blocked(second) == RunState.WaitingSignal(name="go")
    rt.send_signal(second, "go", None)
    assert await rt.run_until_blocked(second) == RunState.Completed(output=2)
    granted = [e for e in rt.load_history(second) if e.type == "MutexGranted"]
    assert granted[0].attrs == {"key": "printer", "lock_seq": 2}
    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(second)).closed


@pytest.mark.parametrize("ending", ["terminate", "cancel", "fail"])
async def test_a_run_that_ends_any_way_releases_its_lock(
    open_rt: Open, ending: str
) -> None:
    rt = runtime(open_rt)
    first = rt.start_workflow("fails_holding", "k")
    second = rt.start_workflow("holder", "k")
    await rt.run_until_blocked(first)
    assert await rt.run_until_blocked(second) == RunState.WaitingMutex(key="k")

    if ending == "terminate":
        rt.terminate(first, "stop")
    elif ending == "cancel":
        rt.cancel(first, "stop")
    else:
        rt.send_signal(first, "go", None)
    await rt.run_until_idle()

    assert rt.outcome(first) != ExecutionOutcome.Running()
    assert await rt.run_until_blocked(second) == RunState.WaitingSignal(name="go")


@pytest.mark.parametrize("ending", ["time out", "continue as new", "external cancel"])
async def test_a_run_that_times_out_continues_or_is_sealed_by_another_run_releases_its_lock(
    open_rt: Open, clock: Any, ending: str
) -> None:
    rt = runtime(open_rt)
    name = {"time out": "times_out_holding", "continue as new": "continues_holding"}
    first = rt.start_workflow(name.get(ending, "fails_holding"), "k")
    second = rt.start_workflow("holder", "k")
    await rt.run_until_blocked(first)
    assert await rt.run_until_blocked(second) == RunState.WaitingMutex(key="k")

    if ending == "time out":
        clock.advance("31s")
        assert isinstance(await rt.run_until_blocked(first), RunState.TimedOut)
    elif ending == "continue as new":
        rt.send_signal(first, "go", None)
        state = await rt.run_until_blocked(first)
        assert isinstance(state, RunState.ContinuedAsNew)
        # The successor starts without the lock: it does not inherit it.
        assert await rt.run_until_blocked(state.next) == RunState.WaitingSignal(
            name="go"
        )
    else:
        canceller = rt.start_workflow("cancels_run", str(first))
        assert await rt.run_until_blocked(canceller) == RunState.Completed(
            output="sealed"
        )

    assert await rt.run_until_blocked(second) == RunState.WaitingSignal(name="go")
    granted = [e.attrs for e in rt.load_history(second) if e.type == "MutexGranted"]
    assert granted == [{"key": "k", "lock_seq": 2}]


async def test_a_waiter_that_ends_gives_up_its_queue_place(open_rt: Open) -> None:
    rt = runtime(open_rt)
    first = rt.start_workflow("holder", "k")
    quitter = rt.start_workflow("holder", "k")
    third = rt.start_workflow("holder", "k")
    await rt.run_until_blocked(first)
    assert await rt.run_until_blocked(quitter) == RunState.WaitingMutex(key="k")
    assert await rt.run_until_blocked(third) == RunState.WaitingMutex(key="k")

    rt.terminate(quitter, "no longer needed")
    rt.send_signal(first, "go", None)
    await rt.run_until_idle()

    assert rt.outcome(first) == ExecutionOutcome.Completed(output=1)
    assert await rt.run_until_blocked(third) == RunState.WaitingSignal(name="go")
    assert [e.attrs for e in rt.load_history(third) if e.type == "MutexGranted"] == [
        {"key": "k", "lock_seq": 2}
    ]


async def test_a_held_lock_survives_a_reopen(open_rt: Open) -> None:
    rt = runtime(open_rt)
    first = rt.start_workflow("holder", "k")
    second = rt.start_workflow("holder", "k")
    await rt.run_until_blocked(first)
    await rt.run_until_blocked(second)
    rt.close()

    reopened = runtime(open_rt)

    assert await reopened.run_until_blocked(second) == RunState.WaitingMutex(key="k")
    reopened.send_signal(first, "go", None)
    assert await reopened.run_until_blocked(first) == RunState.Completed(output=1)
    assert await reopened.run_until_blocked(second) == RunState.WaitingSignal(name="go")


@pytest.mark.parametrize("name", ["acquire_beside_activity", "acquire_beside_timer"])
async def test_an_acquire_beside_another_awaitable_fails_the_run(
    open_rt: Open, clock: Any, name: str
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow(name, "k")
    if name == "acquire_beside_timer":
        assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
        clock.advance("1s")

    with pytest.raises(Unsupported, match="AcquireMutex"):
        await rt.run_until_blocked(exec_id)

    outcome = rt.outcome(exec_id)
    assert isinstance(outcome, ExecutionOutcome.Failed)
    assert outcome.error.type == "Unsupported"
    assert outcome.error.details == {"feature": "AcquireMutex"}
    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(exec_id)).closed
