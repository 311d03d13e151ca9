"""A run ended from outside while parked (terminate, a cancel from another run) replays on WorkflowReplayer.

Its body never saw the ending: it was parked on a wait when the operator or
another run sealed it, so the strict replay must not ask it to have checked
`is_cancelled()`, nor show it a cancel request from its first line.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from harvest_engine import (
    NonDeterminismDetected,
    RunState,
    SqliteRuntime,
    Stuck,
    WorkflowContext,
    WorkflowReplayer,
    workflow,
)

Open = Callable[..., SqliteRuntime]


@workflow
async def waits_for_a_signal(ctx: WorkflowContext, _: Any = None) -> Any:
    await ctx.side_effect(lambda: 1)
    return await ctx.wait_for_signal("never")


@workflow
async def sleeps(ctx: WorkflowContext, _: Any = None) -> None:
    await ctx.sleep("1h")


@workflow
async def child_that_waits(ctx: WorkflowContext, _: Any = None) -> Any:
    return await ctx.wait_for_signal("never")


@workflow
async def waits_for_a_child(ctx: WorkflowContext, _: Any = None) -> Any:
    return await ctx.spawn_child_workflow(child_that_waits, None)


@workflow
async def waits_for_a_condition(ctx: WorkflowContext, _: Any = None) -> None:
    await ctx.side_effect(lambda: 1)
    await ctx.await_condition(lambda: False)


@workflow
async def polls_until_cancelled(ctx: WorkflowContext, _: Any = None) -> int:
    """Checks is_cancelled() between naps: a body that would end early if shown a cancel."""
    naps = 0
    while not ctx.is_cancelled():
        await ctx.sleep("1m")
        naps += 1
    return naps


@workflow
async def cancels_another(ctx: WorkflowContext, target: str) -> None:
    await ctx.request_cancel_external_workflow(target)


WORKFLOWS = [
    waits_for_a_signal,
    sleeps,
    child_that_waits,
    waits_for_a_child,
    waits_for_a_condition,
    polls_until_cancelled,
    cancels_another,
]
PARKED = [
    "waits_for_a_signal",
    "sleeps",
    "waits_for_a_child",
    "waits_for_a_condition",
    "polls_until_cancelled",
]


def runtime(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    return rt


async def park(rt: SqliteRuntime, exec_id: Any) -> None:
    with contextlib.suppress(Stuck):  # parked on a condition nothing can change
        await rt.run_until_blocked(exec_id)
    assert rt.describe(exec_id).state == "RUNNING"


@pytest.mark.parametrize("name", PARKED)
async def test_a_run_terminated_while_parked_replays(open_rt: Open, name: str) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow(name)
    await park(rt, exec_id)
    rt.terminate(exec_id, "stuck for an hour")
    assert rt.describe(exec_id).state == "TERMINATED"

    result = WorkflowReplayer(WORKFLOWS).replay(rt.load_history(exec_id))

    assert result.closed


async def test_a_run_a_cancel_from_another_run_sealed_while_parked_replays(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    target = rt.start_workflow("polls_until_cancelled")
    await park(rt, target)
    canceller = rt.start_workflow("cancels_another", str(target))
    assert await rt.run_until_blocked(canceller) == RunState.Completed(output=None)
    assert rt.describe(target).state == "CANCELLED"

    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(target)).closed


async def test_a_terminated_run_whose_code_changed_still_diverges(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("sleeps")
    await park(rt, exec_id)
    rt.terminate(exec_id, "stop")

    @workflow(name="sleeps")
    async def sleeps_longer(ctx: WorkflowContext, _: Any = None) -> None:
        await ctx.side_effect(lambda: 2)
        await ctx.sleep("1h")

    with pytest.raises(NonDeterminismDetected):
        WorkflowReplayer([sleeps_longer]).replay(rt.load_history(exec_id))
