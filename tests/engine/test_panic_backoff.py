"""Panics carry the user-code traceback and wait a backoff (1 s, 2 s, ...) before a pass retries them."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from harvest_engine import (
    ManualClock,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowPanicked,
    workflow,
)

Open = Callable[..., SqliteRuntime]
THIS_FILE = os.path.basename(__file__)


def price_of(order: dict[str, Any]) -> int:
    return order["qty"] * 3  # the bug: orders have no "qty"


@workflow(name="order")
async def buggy_order(ctx: WorkflowContext, order: dict[str, Any]) -> int:
    return price_of(order)


@workflow(name="order")
async def fixed_order(ctx: WorkflowContext, order: dict[str, Any]) -> int:
    return order["count"] * 3


@workflow
async def naps_then_breaks(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.sleep("1m")
    return {}["missing"]


def runtime(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    rt.register_workflow(buggy_order)
    rt.register_workflow(naps_then_breaks)
    return rt


async def test_a_panic_carries_the_user_code_traceback(open_rt: Open) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("order", {"count": 2})

    with pytest.raises(WorkflowPanicked) as caught:
        await rt.run_until_blocked(exec_id)

    frames = caught.value.details["traceback"]  # type: ignore[attr-defined]
    assert [f["function"] for f in frames] == ["buggy_order", "price_of"]
    assert {os.path.basename(f["file"]) for f in frames} == {THIS_FILE}
    assert (
        frames[-1]["source"]
        == 'return order["qty"] * 3  # the bug: orders have no "qty"'
    )
    line = frames[-1]["line"]
    assert f"at {THIS_FILE}:{line} in price_of" in str(caught.value)
    with pytest.raises(WorkflowPanicked):
        await rt.run_until_blocked(exec_id)
    failed = await rt.run_until_blocked(exec_id)
    assert isinstance(failed, RunState.Failed)
    error = failed.error
    assert error.type == "Panic"
    assert error.details["error_type"] == "KeyError"
    assert error.details["traceback"] == frames
    assert f"{THIS_FILE}:{line}" in error.message


async def test_a_pass_retries_a_panicked_run_after_1s_then_2s(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("order", {"count": 2})
    start = clock.now()

    with pytest.raises(WorkflowPanicked) as first:
        await rt.poll_once()
    assert first.value.count == 1  # type: ignore[attr-defined]
    assert first.value.retry_at == start + timedelta(seconds=1)  # type: ignore[attr-defined]
    # Nothing happens until the backoff passes: no decision, no panic counted.
    assert await rt.poll_once() is False
    await rt.run_until_idle()
    assert rt.store.runs_needing_decision(clock.now()) == []
    assert rt.next_wakeup() == start + timedelta(seconds=1)

    clock.advance("1s")
    with pytest.raises(WorkflowPanicked) as second:
        await rt.poll_once()
    assert second.value.count == 2  # type: ignore[attr-defined]
    assert rt.next_wakeup() == clock.now() + timedelta(seconds=2)
    clock.advance("1s")
    assert await rt.poll_once() is False
    clock.advance("1s")
    assert await rt.poll_once() is True
    state = rt.outcome(exec_id)
    assert state.error.type == "Panic"  # type: ignore[attr-defined]


async def test_the_backoff_survives_a_reopen(open_rt: Open, clock: ManualClock) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("order", {"count": 2})
    with pytest.raises(WorkflowPanicked):
        await rt.poll_once()
    rt.close()

    again = open_rt()
    again.register_workflow(fixed_order)
    assert await again.poll_once() is False
    assert again.describe(exec_id).state == "RUNNING"
    clock.advance("1s")
    await again.run_until_idle()
    assert again.outcome(exec_id).output == 6  # type: ignore[attr-defined]


async def test_run_until_blocked_retries_at_once_and_a_fix_clears_the_backoff(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("order", {"count": 2})
    with pytest.raises(WorkflowPanicked):
        await rt.poll_once()
    with pytest.raises(WorkflowPanicked) as caught:
        await rt.run_until_blocked(exec_id)
    assert caught.value.count == 2  # type: ignore[attr-defined]

    rt.register_workflow(fixed_order)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=6)


async def test_a_due_timer_does_not_wake_a_server_during_the_backoff(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("naps_then_breaks")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    clock.advance("1m")
    with pytest.raises(WorkflowPanicked):
        await rt.poll_once()

    # The timer row is still due, but the run waits out its backoff first.
    assert rt.next_wakeup() == clock.now() + timedelta(seconds=1)
    assert await rt.poll_once() is False
    clock.advance("1s")
    with pytest.raises(WorkflowPanicked):
        await rt.poll_once()
