"""Cancellation that stops work: a run's cancel or terminate, and a start-to-close, reach running bodies.

The bodies record when they started and when they stopped (and whether
`is_cancelled()` said so); a sync body stops at its next `heartbeat()`
(ActivityCancelled), an async one at its next await (CancelledError).
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityCancelled,
    ActivityContext,
    RunState,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.activity import ActivityRunInfo
from harvest_engine.store.postgres.notify import cancel_notices, read_cancel_notice

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine import SqliteRuntime

# What the bodies saw, by body name: started / stopped (monotonic), cancelled flag.
SEEN: dict[str, dict[str, Any]] = {}
LOCK = threading.Lock()


def note(name: str, **facts: Any) -> None:
    with LOCK:
        SEEN.setdefault(name, {}).update(facts)


@activity
async def parked_async(ctx: ActivityContext, _: Any) -> str:
    note("async", started=time.monotonic())
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        note("async", stopped=time.monotonic(), flag=ctx.is_cancelled())
        raise
    return "slept"


@activity
def beating_sync(ctx: ActivityContext, _: Any) -> str:
    note("sync", started=time.monotonic())
    try:
        for i in range(3000):
            ctx.heartbeat(i)
            time.sleep(0.01)
    except ActivityCancelled:
        note("sync", stopped=time.monotonic(), flag=ctx.is_cancelled())
        raise
    return "beat"


@workflow
async def one_body(ctx: WorkflowContext, kind: str) -> str:
    # A run's bodies run one after another: one run per body, side by side.
    body = parked_async if kind == "async" else beating_sync
    return str(await ctx.execute_activity(body, None))


@activity(start_to_close="300ms")
def over_budget(ctx: ActivityContext, _: Any) -> str:
    note("budget", started=time.monotonic())
    try:
        while True:
            ctx.heartbeat()
            time.sleep(0.01)
    except ActivityCancelled:
        note("budget", stopped=time.monotonic(), flag=ctx.is_cancelled())
        raise


@workflow
async def one_over_budget(ctx: WorkflowContext, _: Any) -> str:
    return str(await ctx.execute_activity(over_budget, None))


def _runtime(open_rt: Callable[..., SqliteRuntime]) -> SqliteRuntime:
    rt = open_rt()
    rt.register_workflow(one_body)
    rt.register_workflow(one_over_budget)
    rt.register_activity(parked_async)
    rt.register_activity(beating_sync)
    rt.register_activity(over_budget)
    SEEN.clear()
    return rt


async def _until(check: Callable[[], bool], what: str, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {SEEN}")
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("how", ["cancel", "terminate"])
async def test_a_stopped_runs_sync_and_async_bodies_stop_within_a_second(
    open_rt: Callable[..., SqliteRuntime], how: str
) -> None:
    rt = _runtime(open_rt)
    runs = [rt.start_workflow("one_body", kind) for kind in ("async", "sync")]
    stop = asyncio.Event()
    server = asyncio.create_task(rt.serve(stop, poll_interval="5ms"))
    try:
        await _until(
            lambda: (
                "started" in SEEN.get("async", {}) and "started" in SEEN.get("sync", {})
            ),
            "both bodies to start",
        )
        await asyncio.sleep(0.05)
        at = time.monotonic()
        for exec_id in runs:
            if how == "cancel":
                rt.cancel(exec_id, "customer left")
            else:
                rt.terminate(exec_id, "customer left")
        await _until(
            lambda: "stopped" in SEEN["async"] and "stopped" in SEEN["sync"],
            "both bodies to stop",
        )
        await _until(
            lambda: all(rt.describe(r).state != "RUNNING" for r in runs),
            "the runs to end",
        )
    finally:
        stop.set()
        await asyncio.wait_for(server, 10)
    for name in ("async", "sync"):
        assert SEEN[name]["stopped"] - at < 1.0, SEEN
        assert SEEN[name]["flag"] is True
    ended = "CANCELLED" if how == "cancel" else "TERMINATED"
    assert [rt.describe(r).state for r in runs] == [ended, ended]
    if how == "cancel":
        # The cancelled attempts are recorded so, and never retried.
        attempts = rt.activity_attempts(runs[0], "parked_async") + (
            rt.activity_attempts(runs[1], "beating_sync")
        )
        assert [a.outcome for a in attempts] == ["CANCELLED", "CANCELLED"]
        assert {a.error.type for a in attempts if a.error} == {"ActivityCancelled"}


async def test_a_sync_body_past_its_start_to_close_is_cancelled_and_times_out(
    open_rt: Callable[..., SqliteRuntime],
) -> None:
    rt = _runtime(open_rt)
    exec_id = rt.start_workflow("one_over_budget")
    stop = asyncio.Event()
    server = asyncio.create_task(rt.serve(stop, poll_interval="5ms"))
    try:
        await _until(lambda: "stopped" in SEEN.get("budget", {}), "the body to stop")
        await _until(
            lambda: bool(rt.activity_attempts(exec_id, "over_budget")),
            "the attempt's record",
        )
    finally:
        stop.set()
        await asyncio.wait_for(server, 10)
    seen = SEEN["budget"]
    assert seen["flag"] is True
    assert 0.25 < seen["stopped"] - seen["started"] < 1.0
    first = rt.activity_attempts(exec_id, "over_budget")[0]
    assert first.outcome == "TIMED_OUT"


def test_an_activity_context_is_not_cancelled_until_its_attempt_is() -> None:
    ctx = ActivityContext(
        ActivityRunInfo("r", "a", 1, 1, "default", 1, 1), idempotency_key="k"
    )
    assert ctx.is_cancelled() is False
    ctx.heartbeat({"step": 1})  # no cancel: the heartbeat is kept
    assert ctx.heartbeat_details() == {"step": 1}


@activity
def counted(ctx: ActivityContext, n: int) -> int:
    note("counted", **{f"ran_{n}": True})
    return n


@workflow
async def hasty(ctx: WorkflowContext, _: Any) -> str:
    # Cancels its activity before any pass claims it, and ends: the task is
    # deleted with the run, and the cancel's notice was never used.
    ctx.start_activity(counted, 1).cancel()
    return "left"


@workflow
async def patient(ctx: WorkflowContext, _: Any) -> int:
    return int(await ctx.execute_activity(counted, 2))


async def test_a_stale_cancel_notice_never_cancels_another_runs_attempt(
    open_rt: Callable[..., SqliteRuntime],
) -> None:
    # On SQLite the next task takes the id of the deleted one (INTEGER
    # PRIMARY KEY), with the same attempt number: a notice keyed by (task id,
    # attempt) cancelled the other run's first attempt before it ran.
    rt = open_rt()
    for fn in (hasty, patient):
        rt.register_workflow(fn)
    rt.register_activity(counted)
    SEEN.clear()
    first = rt.start_workflow("hasty")
    assert await rt.run_until_blocked(first) == RunState.Completed(output="left")
    second = rt.start_workflow("patient")
    assert await rt.run_until_blocked(second) == RunState.Completed(output=2)
    assert SEEN["counted"] == {"ran_2": True}


def test_cancel_notices_stay_under_the_notify_limit_and_read_back() -> None:
    keys = [(str(uuid.uuid4()), i, 3) for i in range(500)]
    sent = cancel_notices(keys, "é" * 1000)
    assert len(sent) > 1
    assert all(len(payload.encode()) < 8000 for payload in sent)
    heard = [read_cancel_notice(payload) for payload in sent]
    assert [key for one in heard if one for key in one[0]] == keys
    assert {one[1] for one in heard if one} == {"é" * 200}
