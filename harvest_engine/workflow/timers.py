"""TimerHandle: a cancellable durable timer (`ctx.start_timer`), from TimerStarted to its end.

A TimerHandle records TimerStarted when made and arms its durable row at
its first await; `ctx.timer`, the signal timeout and the child timeout race
against one as well. How a timer wait ends is `TimerOutcome` (pending.py,
where the futures it settles live).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.timestamps import to_text
from harvest_engine.workflow.pending import TimerOutcome

if TYPE_CHECKING:
    import asyncio
    from datetime import timedelta

    from harvest_engine.workflow.machine import Machine

__all__ = ["TimerHandle", "TimerOutcome", "start_timer"]


def start_timer(
    machine: Machine, timer_id: str, duration: timedelta, summary: str | None = None
) -> asyncio.Future[Any]:
    """Record TimerStarted (`fire_at` is the earliest fire time); the row is armed apart."""
    fire_at = machine.clock() + duration
    attrs: dict[str, Any] = {
        "timer_id": timer_id,
        "fire_at": to_text(fire_at),
        "duration": duration.total_seconds(),
    }
    if summary is not None:
        attrs["summary"] = summary
    return machine.commands.start_timer(attrs)


class TimerHandle:
    """A cancellable durable timer from `ctx.start_timer`."""

    def __init__(self, machine: Machine, timer_id: str, duration: timedelta) -> None:
        self._machine = machine
        self.timer_id = timer_id
        self._duration = duration
        self._armed = False
        self._future = start_timer(machine, timer_id, duration)

    def _arm(self) -> None:
        """Arm the durable row once; the deadline counts from here."""
        if not self._armed and not self._future.done():
            self._armed = True
            machine = self._machine
            machine.commands.arm_timer(
                self.timer_id, machine.clock() + self._duration, self._future
            )

    async def await_fire(self) -> TimerOutcome:
        """Wait until the timer fires or is cancelled; the first await arms it."""
        if not self._future.done():
            self._arm()
            self._machine.commands.note_await("TimerAwait")
        result: TimerOutcome = await self._future
        return result

    def cancel(self) -> None:
        """Cancel the timer if it has not fired (records TimerCancelled)."""
        if self._future.done():
            return
        self._machine.commands.cancel_timer(self.timer_id)
        self._future.set_result(TimerOutcome.CANCELLED)

    def reset(self, duration: Duration) -> None:
        """Cancel and arm again at once with a new duration, counted from now."""
        self.cancel()
        self._duration = to_timedelta(duration, what="TimerHandle.reset duration")
        self._armed = False
        self._future = start_timer(self._machine, self.timer_id, self._duration)
        self._arm()

    @property
    def fired(self) -> bool:
        """Whether the timer has fired."""
        return self._future.done() and self._future.result() is TimerOutcome.FIRED
