"""Waits that race a durable deadline: a child's `timeout`, `wait_for_signal_timeout`.

Each arms an anonymous TimerHandle beside the wait; whichever settles first
decides the outcome, and the loser is cancelled or forgotten so replay
meets the same events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.errors import ChildWorkflowError
from harvest_engine.names import check_name
from harvest_engine.workflow.timers import TimerHandle

if TYPE_CHECKING:
    import asyncio

    from harvest_engine.workflow.machine import Machine

_TIMED_OUT = object()


async def child_within(
    machine: Machine,
    name: str,
    child: str,
    future: asyncio.Future[Any],
    timeout: Duration,  # noqa: ASYNC109 -- a durable timer (API.md), not asyncio.timeout
) -> Any:
    """An attached child's JSON result, or ``ChildWorkflowTimeout`` once `timeout` passes first."""
    handle = TimerHandle(
        machine,
        machine.commands.next_timer_id(),
        to_timedelta(timeout, what="child timeout"),
    )
    handle._arm()
    waiter: asyncio.Future[Any] = machine.loop.create_future()

    def deadline_won(_: asyncio.Future[Any]) -> None:
        # A due deadline is applied before a late child's result (guide §9).
        if not waiter.done() and handle.fired:
            machine.commands.forget_child(child)
            waiter.set_exception(
                ChildWorkflowError(
                    f"child workflow {name} ({child}) did not finish within its timeout",
                    type="ChildWorkflowTimeout",
                )
            )

    def child_done(fut: asyncio.Future[Any]) -> None:
        if waiter.done():
            return
        if fut.exception() is not None:
            waiter.set_exception(fut.exception())  # type: ignore[arg-type]
        else:
            waiter.set_result(fut.result())

    handle._future.add_done_callback(deadline_won)
    future.add_done_callback(child_done)
    try:
        return await waiter
    finally:
        handle.cancel()


async def signal_within(machine: Machine, name: str, duration: Duration) -> Any:
    """The next payload of signal `name`, or None when `duration` passes first."""
    signals = machine.signals
    if signals.has(check_name(name, "signal name")):
        return signals.pop(name)
    waiter = signals.waiter(name)
    handle = TimerHandle(
        machine,
        machine.commands.next_timer_id(),
        to_timedelta(duration, what="signal timeout"),
    )
    handle._arm()

    def deadline_won(_: asyncio.Future[Any]) -> None:
        if not waiter.done():
            signals.discard(name, waiter)
            waiter.set_result(_TIMED_OUT)

    handle._future.add_done_callback(deadline_won)
    result = await waiter
    if result is _TIMED_OUT:
        return None
    handle.cancel()
    return result
