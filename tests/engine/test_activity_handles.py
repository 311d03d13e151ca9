"""ctx.start_activity's handle: await it, or cancel it the three ways Temporal has; replays alike.

The bodies note when they started and stopped; the workflow cancels its
handle when a signal comes, while the body runs.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityCancellationType,
    ActivityCancelled,
    ActivityContext,
    RetryPolicy,
    WorkflowContext,
    WorkflowReplayer,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine import SqliteRuntime

SEEN: dict[str, dict[str, Any]] = {}


@activity
async def parked(ctx: ActivityContext, kind: str) -> str:
    SEEN.setdefault(kind, {})["started"] = time.monotonic()
    try:
        await asyncio.sleep(0.5 if kind == "abandon" else 30)
    except asyncio.CancelledError:
        SEEN[kind]["stopped"] = time.monotonic()
        raise
    SEEN[kind]["finished"] = time.monotonic()
    return "finished"


@workflow
async def cancels_on_signal(ctx: WorkflowContext, kind: str) -> str:
    handle = ctx.start_activity(parked, kind, cancellation_type=kind)
    await ctx.wait_for_signal("stop")
    assert handle.cancel() is True
    assert handle.cancel() is False  # once
    try:
        return f"result {await handle}"
    except ActivityCancelled as exc:
        return f"cancelled: {exc.type}"


@activity(retry=RetryPolicy(max_attempts=5, initial_interval="1h"))
def fails_once(ctx: ActivityContext, _: Any) -> str:
    SEEN.setdefault("backoff", {}).setdefault("runs", 0)
    SEEN["backoff"]["runs"] += 1
    raise ValueError("not yet")


@workflow
async def cancels_in_backoff(ctx: WorkflowContext, _: Any) -> str:
    handle = ctx.start_activity(
        fails_once, None, cancellation_type="wait_cancellation_completed"
    )
    await ctx.wait_for_signal("stop")
    handle.cancel()
    try:
        await handle
    except ActivityCancelled as exc:
        return f"cancelled: {exc.message}"
    return "not cancelled"


@workflow
async def awaits_a_handle(ctx: WorkflowContext, x: int) -> list[Any]:
    handles = [ctx.start_activity(add_one, x + i) for i in range(3)]
    return list(await asyncio.gather(*handles))


@activity
def add_one(ctx: ActivityContext, x: int) -> int:
    return x + 1


FLOWS = [cancels_on_signal, cancels_in_backoff, awaits_a_handle]


def _runtime(open_rt: Callable[..., SqliteRuntime]) -> SqliteRuntime:
    rt = open_rt()
    for flow in FLOWS:
        rt.register_workflow(flow)
    for body in (parked, fails_once, add_one):
        rt.register_activity(body)
    SEEN.clear()
    return rt


async def _until(check: Callable[[], bool], what: str, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {SEEN}")
        await asyncio.sleep(0.01)


def _types(rt: SqliteRuntime, exec_id: Any) -> list[str]:
    return [e.type for e in rt.load_history(exec_id)]


@pytest.mark.parametrize("kind", [t.value for t in ActivityCancellationType])
async def test_a_handle_cancels_its_running_activity_as_its_type_says(
    open_rt: Callable[..., SqliteRuntime], kind: str
) -> None:
    rt = _runtime(open_rt)
    exec_id = rt.start_workflow("cancels_on_signal", kind)
    stop = asyncio.Event()
    server = asyncio.create_task(rt.serve(stop, poll_interval="5ms"))
    try:
        await _until(lambda: "started" in SEEN.get(kind, {}), "the body to start")
        at = time.monotonic()
        rt.send_signal(exec_id, "stop", None)
        await _until(
            lambda: rt.describe(exec_id).state == "COMPLETED", "the run to end"
        )
        if kind == "abandon":
            await _until(lambda: "finished" in SEEN[kind], "the body to finish")
    finally:
        stop.set()
        await asyncio.wait_for(server, 10)
    output = rt.describe(exec_id).output.value
    types = _types(rt, exec_id)
    assert output == "cancelled: ActivityCancelled"
    if kind == "abandon":
        assert "ActivityCancelRequested" not in types
        assert "stopped" not in SEEN[kind]  # no cancel reached the body
    else:
        assert "ActivityCancelRequested" in types
        assert SEEN[kind]["stopped"] - at < 1.0
    if kind == "wait_cancellation_completed":
        # The run waited for the body's end and its recorded attempt.
        failed = types.index("ActivityFailed")
        assert types.index("ActivityCancelRequested") < failed
        assert failed < types.index("WorkflowCompleted")
        (attempt,) = rt.activity_attempts(exec_id, "parked")
        assert attempt.outcome == "CANCELLED"
    WorkflowReplayer(FLOWS).replay(rt.load_history(exec_id))


async def test_a_handle_cancel_reaches_an_activity_waiting_for_its_retry(
    open_rt: Callable[..., SqliteRuntime],
) -> None:
    rt = _runtime(open_rt)
    exec_id = rt.start_workflow("cancels_in_backoff")
    await rt.run_until_blocked(exec_id)  # the first attempt failed: backoff 1h
    assert SEEN["backoff"]["runs"] == 1
    rt.send_signal(exec_id, "stop", None)
    await rt.run_until_blocked(exec_id)  # records the cancel request
    await rt.run_until_idle()  # the waiting attempt starts cancelled
    assert rt.describe(exec_id).state == "COMPLETED"
    assert rt.describe(exec_id).output.value.startswith("cancelled: ")
    assert SEEN["backoff"]["runs"] == 1  # the body never ran again
    outcomes = [a.outcome for a in rt.activity_attempts(exec_id, "fails_once")]
    assert outcomes == ["FAILED", "CANCELLED"]
    WorkflowReplayer(FLOWS).replay(rt.load_history(exec_id))


async def test_handles_are_awaitable_like_execute_activity(
    open_rt: Callable[..., SqliteRuntime],
) -> None:
    rt = _runtime(open_rt)
    exec_id = rt.start_workflow("awaits_a_handle", 10)
    await rt.run_until_idle()
    assert rt.describe(exec_id).output.value == [11, 12, 13]
    WorkflowReplayer(FLOWS).replay(rt.load_history(exec_id))


@workflow
async def bad_type(ctx: WorkflowContext, _: Any) -> str:
    try:
        ctx.start_activity(add_one, 1, cancellation_type="sometimes")
    except ValueError as exc:
        return str(exc)
    return "taken"


async def test_a_cancellation_type_that_is_none_of_the_three_is_refused(
    open_rt: Callable[..., SqliteRuntime],
) -> None:
    rt = _runtime(open_rt)
    rt.register_workflow(bad_type)
    exec_id = rt.start_workflow("bad_type")
    await rt.run_until_idle()
    assert "TRY_CANCEL" in rt.describe(exec_id).output.value
    assert "ActivityScheduled" not in _types(rt, exec_id)  # nothing scheduled
