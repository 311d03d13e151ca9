"""Changing workflow code under runs in flight: patched(), deprecate_patch(), MarkerRecorded.

Every test writes a real file with one version of the code, closes it,
reopens it with another function registered under the same workflow name
(what a deploy does) and drives the runs on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from harvest_engine import (
    ActivityContext,
    ExecutionOutcome,
    NonDeterminismDetected,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowPanicked,
    WorkflowReplayer,
    activity,
    workflow,
)

Open = Callable[..., SqliteRuntime]


@activity
async def step(ctx: ActivityContext, label: str) -> str:
    return label


@activity
async def fast_step(ctx: ActivityContext, label: str) -> str:
    return f"{label}-fast"


@activity(name="step")
async def step_reworded(ctx: ActivityContext, label: str) -> str:
    return f"{label}!"


@workflow(name="order")
async def order_v1(ctx: WorkflowContext, _: Any = None) -> list[str]:
    first = await ctx.execute_activity(step, "one")
    second = await ctx.execute_activity(step, "two")
    await ctx.wait_for_signal("go")
    return [first, second]


@workflow(name="order")
async def order_v2(ctx: WorkflowContext, _: Any = None) -> list[str]:
    first = await ctx.execute_activity(step, "one")
    if ctx.patched("fast-two"):
        second = await ctx.execute_activity(fast_step, "two")
    else:
        second = await ctx.execute_activity(step, "two")
    await ctx.wait_for_signal("go")
    return [first, second]


@workflow(name="order")
async def order_v3(ctx: WorkflowContext, _: Any = None) -> list[str]:
    first = await ctx.execute_activity(step, "one")
    ctx.deprecate_patch("fast-two")
    second = await ctx.execute_activity(fast_step, "two")
    await ctx.wait_for_signal("go")
    return [first, second]


@workflow(name="order")
async def order_v4(ctx: WorkflowContext, _: Any = None) -> list[str]:
    first = await ctx.execute_activity(step, "one")
    second = await ctx.execute_activity(fast_step, "two")
    await ctx.wait_for_signal("go")
    return [first, second]


@workflow(name="order")
async def order_unpatched_change(ctx: WorkflowContext, _: Any = None) -> list[str]:
    first = await ctx.execute_activity(step, "one")
    second = await ctx.execute_activity(fast_step, "two")
    await ctx.wait_for_signal("go")
    return [first, second]


@workflow(name="order")
async def order_v1_with_a_new_ending(ctx: WorkflowContext, _: Any = None) -> Any:
    first = await ctx.execute_activity(step, "one")
    second = await ctx.execute_activity(step, "two")
    await ctx.wait_for_signal("go")
    third = await ctx.execute_activity(step, "three")
    return [first, second, third]


def opened(open_rt: Open, code: Callable[..., Any], act: Any = step) -> SqliteRuntime:
    rt = open_rt()
    rt.register_workflow(code)
    rt.register_activity(act)
    rt.register_activity(fast_step)
    return rt


async def park(rt: SqliteRuntime) -> str:
    """Start a run and drive it to its wait for "go"."""
    exec_id = rt.start_workflow("order")
    state = await rt.run_until_blocked(exec_id)
    assert state == RunState.WaitingSignal(name="go")
    return str(exec_id)


async def finish(rt: SqliteRuntime, exec_id: str) -> ExecutionOutcome:
    rt.send_signal(exec_id, "go")
    await rt.run_until_blocked(exec_id)
    return rt.outcome(exec_id)


def markers(rt: SqliteRuntime, exec_id: str) -> list[str]:
    return [
        e.attrs["patch_id"]
        for e in rt.load_history(exec_id)
        if e.type == "MarkerRecorded"
    ]


def reopen(rt: SqliteRuntime, open_rt: Open, code: Callable[..., Any]) -> SqliteRuntime:
    rt.close()
    return opened(open_rt, code)


async def test_a_run_the_old_code_took_past_the_patch_replays_down_the_old_branch(
    open_rt: Open,
) -> None:
    rt = opened(open_rt, order_v1)
    old = await park(rt)

    rt = reopen(rt, open_rt, order_v2)

    assert await finish(rt, old) == ExecutionOutcome.Completed(output=["one", "two"])
    assert markers(rt, old) == []


async def test_a_new_run_takes_the_new_branch_and_records_the_marker(
    open_rt: Open,
) -> None:
    rt = opened(open_rt, order_v2)
    new = await park(rt)

    assert markers(rt, new) == ["fast-two"]
    marker = next(e for e in rt.load_history(new) if e.type == "MarkerRecorded")
    assert marker.attrs == {"patch_id": "fast-two"}
    assert (
        marker.summary() == "fast-two"
    )  # what `harvest history` and the GUI list show
    assert await finish(rt, new) == ExecutionOutcome.Completed(
        output=["one", "two-fast"]
    )


async def test_a_run_that_recorded_the_marker_keeps_the_new_branch_after_a_reopen(
    open_rt: Open,
) -> None:
    rt = opened(open_rt, order_v2)
    new = await park(rt)

    rt = reopen(rt, open_rt, order_v2)

    assert await finish(rt, new) == ExecutionOutcome.Completed(
        output=["one", "two-fast"]
    )
    assert markers(rt, new) == ["fast-two"]


async def test_old_and_new_runs_share_one_file_and_each_keeps_its_branch(
    open_rt: Open,
) -> None:
    rt = opened(open_rt, order_v1)
    old = await park(rt)
    rt = reopen(rt, open_rt, order_v2)
    new = await park(rt)

    rt = reopen(rt, open_rt, order_v2)

    assert await finish(rt, old) == ExecutionOutcome.Completed(output=["one", "two"])
    assert await finish(rt, new) == ExecutionOutcome.Completed(
        output=["one", "two-fast"]
    )


async def test_a_run_parked_right_at_the_patch_point_takes_the_new_branch(
    open_rt: Open,
) -> None:
    @workflow(name="order")
    async def waits_first(ctx: WorkflowContext, _: Any = None) -> list[str]:
        await ctx.wait_for_signal("go")
        return [await ctx.execute_activity(step, "two")]

    @workflow(name="order")
    async def waits_then_patched(ctx: WorkflowContext, _: Any = None) -> list[str]:
        await ctx.wait_for_signal("go")
        chosen = fast_step if ctx.patched("fast-two") else step
        return [await ctx.execute_activity(chosen, "two")]

    rt = opened(open_rt, waits_first)
    parked = await park(rt)

    rt = reopen(rt, open_rt, waits_then_patched)

    # The old code recorded nothing past its wait: the new code decides here.
    assert await finish(rt, parked) == ExecutionOutcome.Completed(output=["two-fast"])
    assert markers(rt, parked) == ["fast-two"]


async def test_a_new_run_resumed_by_an_earlier_of_two_stored_completions_takes_the_new_branch(
    open_rt: Open,
) -> None:
    @workflow(name="order")
    async def two_at_once(ctx: WorkflowContext, _: Any = None) -> list[Any]:
        first = asyncio.ensure_future(ctx.execute_activity(step, "a"))
        second = asyncio.ensure_future(ctx.execute_activity(step, "b"))
        got = [await first, ctx.patched("p")]  # resumed by the first completion
        got.append(await second)
        return got

    rt = opened(open_rt, two_at_once)
    exec_id = rt.start_workflow("order")

    # Both completions are stored before the decision that takes them in.
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output=["a", True, "b"]
    )
    assert markers(rt, str(exec_id)) == ["p"]
    rt = reopen(rt, open_rt, two_at_once)
    assert WorkflowReplayer([two_at_once]).replay(rt.load_history(exec_id)).closed


async def test_the_first_answer_holds_for_the_whole_run(open_rt: Open) -> None:
    @workflow(name="order")
    async def asks_twice(ctx: WorkflowContext, _: Any = None) -> list[bool]:
        await ctx.execute_activity(step, "one")
        first = ctx.patched("p")
        await ctx.wait_for_signal("go")
        return [first, ctx.patched("p")]

    @workflow(name="order")
    async def asks_nothing(ctx: WorkflowContext, _: Any = None) -> list[bool]:
        await ctx.execute_activity(step, "one")
        await ctx.execute_activity(step, "two")
        await ctx.wait_for_signal("go")
        return []

    rt = opened(open_rt, asks_nothing)
    old = await park(rt)
    rt = reopen(rt, open_rt, asks_twice)
    new = await park(rt)

    # Reaching the second call at the live end does not flip an old run to True.
    with pytest.raises(NonDeterminismDetected):
        await finish(rt, old)
    assert await finish(rt, new) == ExecutionOutcome.Completed(output=[True, True])
    assert markers(rt, new) == ["p"]


async def test_changing_durable_calls_without_a_patch_breaks_runs_in_flight(
    open_rt: Open,
) -> None:
    rt = opened(open_rt, order_v1)
    old = await park(rt)

    rt = reopen(rt, open_rt, order_unpatched_change)
    rt.send_signal(old, "go")

    with pytest.raises(NonDeterminismDetected) as caught:
        await rt.run_until_blocked(old)
    assert "fast_step" in str(caught.value)


async def test_changing_an_activity_body_is_safe_for_runs_in_flight(
    open_rt: Open,
) -> None:
    rt = opened(open_rt, order_v1_with_a_new_ending)
    exec_id = await park(rt)
    rt.close()

    rt = opened(open_rt, order_v1_with_a_new_ending, act=step_reworded)

    assert await finish(rt, exec_id) == ExecutionOutcome.Completed(
        output=["one", "two", "three!"]
    )


async def test_code_added_after_the_point_every_run_has_reached_is_safe(
    open_rt: Open,
) -> None:
    rt = opened(open_rt, order_v1)
    exec_id = await park(rt)

    rt = reopen(rt, open_rt, order_v1_with_a_new_ending)

    assert await finish(rt, exec_id) == ExecutionOutcome.Completed(
        output=["one", "two", "three"]
    )


async def test_deprecate_patch_replays_marked_runs_and_marks_new_ones(
    open_rt: Open,
) -> None:
    rt = opened(open_rt, order_v2)
    marked = await park(rt)

    rt = reopen(rt, open_rt, order_v3)
    new = await park(rt)

    assert markers(rt, new) == ["fast-two"]
    assert await finish(rt, marked) == ExecutionOutcome.Completed(
        output=["one", "two-fast"]
    )
    assert await finish(rt, new) == ExecutionOutcome.Completed(
        output=["one", "two-fast"]
    )


async def test_deprecate_patch_breaks_a_run_that_took_the_old_branch(
    open_rt: Open,
) -> None:
    rt = opened(open_rt, order_v1)
    old = await park(rt)

    rt = reopen(rt, open_rt, order_v3)
    rt.send_signal(old, "go")

    with pytest.raises(NonDeterminismDetected):
        await rt.run_until_blocked(old)


async def test_removing_a_retired_patch_still_replays_runs_with_its_marker(
    open_rt: Open,
) -> None:
    rt = opened(open_rt, order_v2)
    marked = await park(rt)
    rt = reopen(rt, open_rt, order_v3)
    deprecated = await park(rt)

    rt = reopen(rt, open_rt, order_v4)

    for exec_id in (marked, deprecated):
        assert await finish(rt, exec_id) == ExecutionOutcome.Completed(
            output=["one", "two-fast"]
        )
    assert markers(rt, marked) == ["fast-two"]


async def test_the_replayer_checks_old_and_new_histories_against_patched_code(
    open_rt: Open,
) -> None:
    rt = opened(open_rt, order_v1)
    old = await park(rt)
    await finish(rt, old)
    rt = reopen(rt, open_rt, order_v2)
    new = await park(rt)
    await finish(rt, new)
    old_history, new_history = rt.load_history(old), rt.load_history(new)

    assert WorkflowReplayer([order_v2]).replay(old_history).closed
    assert WorkflowReplayer([order_v2]).replay(new_history).closed
    assert WorkflowReplayer([order_v4]).replay(new_history).closed
    with pytest.raises(NonDeterminismDetected):
        WorkflowReplayer([order_v3]).replay(old_history)
    with pytest.raises(NonDeterminismDetected):
        WorkflowReplayer([order_v1]).replay(new_history)


@pytest.mark.parametrize("bad", ["", "  ", None, 3])
async def test_a_patch_id_that_is_not_text_is_a_bug_in_the_code(
    open_rt: Open, bad: Any
) -> None:
    @workflow(name="order")
    async def bad_patch(ctx: WorkflowContext, _: Any = None) -> bool:
        return ctx.patched(bad)

    rt = opened(open_rt, bad_patch)
    exec_id = rt.start_workflow("order")

    with pytest.raises(WorkflowPanicked, match="patch id"):
        await rt.run_until_blocked(exec_id)
    assert markers(rt, str(exec_id)) == []
