"""Cancellable durable timers (`ctx.start_timer`) and how a timer wait ends.

A TimerHandle records TimerStarted when made and arms its durable row at
its first await; `ctx.timer`, the signal timeout and the child timeout race
against one as well.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.workflow.commands import Command

if TYPE_CHECKING:
    from datetime import timedelta

    from harvest_engine.workflow.context import WorkflowContext


class TimerOutcome(enum.Enum):
    """How a cancellable timer ended."""

    FIRED = "fired"
    CANCELLED = "cancelled"


class TimerHandle:
    """A cancellable durable timer from `ctx.start_timer`."""

    def __init__(
        self, ctx: WorkflowContext, timer_id: str, duration: timedelta
    ) -> None:
        self._ctx = ctx
        self.timer_id = timer_id
        self._duration = duration
        self._armed = False
        self._future = ctx._start_timer(timer_id, duration)

    def _arm(self) -> None:
        """Arm the durable row once; the deadline counts from here."""
        if not self._armed and not self._future.done():
            self._armed = True
            self._ctx._machine.arm_timer(self.timer_id, self._duration, self._future)

    async def await_fire(self) -> TimerOutcome:
        """Wait until the timer fires or is cancelled; the first await arms it."""
        if not self._future.done():
            self._arm()
            self._ctx._machine.note_await("TimerAwait")
        result: TimerOutcome = await self._future
        return result

    def cancel(self) -> None:
        """Cancel the timer if it has not fired (records TimerCancelled)."""
        if self._future.done():
            return
        self._ctx._machine.emit(Command("TimerCancelled", {"timer_id": self.timer_id}))
        self._ctx._machine.forget_timer(self.timer_id)
        self._future.set_result(TimerOutcome.CANCELLED)

    def reset(self, duration: Duration) -> None:
        """Cancel and arm again at once with a new duration, counted from now."""
        self.cancel()
        self._duration = to_timedelta(duration, what="TimerHandle.reset duration")
        self._armed = False
        self._future = self._ctx._start_timer(self.timer_id, self._duration)
        self._arm()

    @property
    def fired(self) -> bool:
        """Whether the timer has fired."""
        return self._future.done() and self._future.result() is TimerOutcome.FIRED
