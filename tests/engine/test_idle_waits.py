"""Waiting costs nothing while it waits, on both stores (issue 26).

A run waiting on a mutex or on its child keeps no decision flag: it is not
due (`next_wakeup`), so a served runtime sleeps, and the release or the
child's end wakes it. A held start whose workflow this process has no code
for is not due either until the workflow is registered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from harvest_engine import (
    ExecutionOutcome,
    ManualClock,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)

Open = Callable[..., SqliteRuntime]

IDLE = 0.5
"""Seconds a test serves idle: a loop polling every 20 ms tick makes ~25 passes."""


@workflow
async def holds_key(ctx: WorkflowContext, key: str) -> Any:
    async with ctx.mutex(key) as guard:
        await ctx.wait_for_signal("go")
    return guard.lock_seq


@workflow
async def waits_key(ctx: WorkflowContext, key: str) -> Any:
    async with ctx.mutex(key) as guard:
        return guard.lock_seq


@workflow
async def child_waits(ctx: WorkflowContext, value: Any) -> Any:
    await ctx.wait_for_signal("go")
    return value


@workflow
async def parent_waits(ctx: WorkflowContext, value: Any) -> Any:
    return await ctx.spawn_child_workflow(child_waits, value)


@workflow(debounce="10s")
async def settle(ctx: WorkflowContext, value: Any) -> Any:
    return value


def _child_of(rt: SqliteRuntime, parent: Any) -> Any:
    [child] = [
        r.exec_id
        for r in rt.list_executions().executions
        if r.workflow_name == "child_waits"
    ]
    assert rt.describe(child).parent_exec_id == parent
    return child


async def test_mutex_and_child_waiters_are_not_due_until_released(
    open_rt: Open,
) -> None:
    rt = open_rt()
    for fn in (holds_key, waits_key, child_waits, parent_waits):
        rt.register_workflow(fn)
    holder = rt.start_workflow("holds_key", "k")
    await rt.run_until_idle()
    waiter = rt.start_workflow("waits_key", "k")
    parent = rt.start_workflow("parent_waits", 7)
    await rt.run_until_idle()
    assert rt.describe(waiter).state == "RUNNING"
    # Nothing can move until a signal: no run reads as due (it was "now").
    assert rt.next_wakeup() is None
    rt.send_signal(holder, "go", None)
    await rt.run_until_idle()  # the release flags the waiter
    assert rt.outcome(waiter) == ExecutionOutcome.Completed(output=2)
    assert rt.next_wakeup() is None
    rt.send_signal(_child_of(rt, parent), "go", None)
    await rt.run_until_idle()  # the child's end flags its parent
    assert rt.outcome(parent) == ExecutionOutcome.Completed(output=7)


async def test_a_waiter_behind_a_cancelled_run_is_woken_by_its_seal(
    open_rt: Open,
) -> None:
    rt = open_rt()
    for fn in (holds_key, waits_key):
        rt.register_workflow(fn)
    holder = rt.start_workflow("holds_key", "k")
    await rt.run_until_idle()
    second = rt.start_workflow("holds_key", "k")
    third = rt.start_workflow("waits_key", "k")
    await rt.run_until_idle()
    assert rt.next_wakeup() is None  # two waiters, neither polled
    rt.terminate(holder, "gone")  # its seal frees the key: the next head goes on
    await rt.run_until_idle()
    assert [w.kind for w in rt.where_waiting(second)] == ["signal"]
    rt.cancel(second, "gone too")  # a holder's cancel releases to the last waiter
    await rt.run_until_idle()
    assert rt.outcome(third) == ExecutionOutcome.Completed(output=3)


class Passes:
    """Counts the serving loop's passes (each would re-decide a polled waiter)."""

    def __init__(self, rt: SqliteRuntime) -> None:
        self.count = 0
        real_pass = rt._driver.one_pass

        async def counted(now: Any) -> Any:
            self.count += 1
            return await real_pass(now)

        rt._driver.one_pass = counted  # type: ignore[method-assign]

    async def while_idle(self, seconds: float) -> int:
        """The passes made over `seconds` of waiting."""
        before = self.count
        await asyncio.sleep(seconds)
        return self.count - before


async def _serve(rt: SqliteRuntime, body: Callable[[], Any]) -> None:
    """Serve while `body` runs."""
    stop = asyncio.Event()
    server = asyncio.create_task(rt.serve(stop, poll_interval="20ms"))
    try:
        await body()
    finally:
        stop.set()
        await asyncio.wait_for(server, timeout=10)


async def _until(predicate: Callable[[], bool], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not predicate():
        assert loop.time() < deadline, f"{what} never happened"
        await asyncio.sleep(0.01)


async def test_a_served_runtime_sleeps_while_runs_wait_on_a_mutex_or_a_child(
    open_rt: Open,
) -> None:
    rt = open_rt()
    for fn in (holds_key, waits_key, child_waits, parent_waits):
        rt.register_workflow(fn)
    holder = rt.start_workflow("holds_key", "k")
    waiter = rt.start_workflow("waits_key", "k")
    parent = rt.start_workflow("parent_waits", 1)
    passes = Passes(rt)
    idle: list[int] = []

    async def body() -> None:
        await _until(lambda: rt.where_waiting(waiter) != [], "the mutex wait")
        await _until(lambda: rt.where_waiting(parent) != [], "the child wait")
        await asyncio.sleep(0.1)
        idle.append(await passes.while_idle(IDLE))
        rt.send_signal(holder, "go", None)
        rt.send_signal(_child_of(rt, parent), "go", None)
        await _until(lambda: rt.describe(waiter).state == "COMPLETED", "the grant")
        await _until(lambda: rt.describe(parent).state == "COMPLETED", "the result")

    await _serve(rt, body)
    assert idle[0] <= 2, idle  # it sleeps: polling makes ~25 passes in 0.5 s


async def test_a_held_start_without_its_code_costs_nothing_until_registered(
    open_rt: Open, clock: ManualClock
) -> None:
    with open_rt() as first:  # the process with the code held the start
        first.register_workflow(settle)
        held = first.start_workflow_with_id("settle", "k", "last")
    clock.advance(timedelta(seconds=11))  # its window closed
    rt = open_rt()  # a process without that code serves the file
    assert rt.next_wakeup() is not None  # due, until a pass finds no code for it
    passes = Passes(rt)
    idle: list[int] = []

    async def body() -> None:
        await asyncio.sleep(0.1)  # the first pass finds the code missing
        idle.append(await passes.while_idle(IDLE))
        rt.register_workflow(settle)  # the code arrives: the run starts
        await _until(lambda: bool(rt.list_executions().executions), "the start")

    await _serve(rt, body)
    assert idle[0] <= 2, idle  # it slept: a poll-tick spin makes ~25 passes
    await rt.run_until_idle()
    assert rt.outcome(held) == ExecutionOutcome.Completed(output="last")
