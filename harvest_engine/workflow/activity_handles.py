"""ActivityHandle: an activity started by `ctx.start_activity`, awaited later or cancelled.

How a cancel goes, as in Temporal (`ActivityCancellationType`):

- TRY_CANCEL records ActivityCancelRequested (the engine cancels the
  attempt: a running body gets its cancel, a waiting one starts
  cancelled) and the handle ends at once with `ActivityCancelled`.
- WAIT_CANCELLATION_COMPLETED records the same request and the handle
  waits for the activity's end: `ActivityCancelled` once the body stopped
  and its attempt is recorded, its result if it finished first.
- ABANDON records nothing: the body runs on, the handle ends at once.

A handle that ended at once no longer waits on the activity, so its later
completion or failure changes nothing. Every step is workflow code's own
call and its recorded event, so a replay does the same.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.errors import ActivityCancelled
from harvest_engine.workflow.commands import Command
from harvest_engine.workflow.targets import checked_value

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Generator

    from harvest_engine.authoring import RetryPolicy
    from harvest_engine.workflow.machine import Machine


class ActivityCancellationType(StrEnum):
    """What `ActivityHandle.cancel()` does (Temporal's three)."""

    TRY_CANCEL = "try_cancel"
    """Ask the engine to cancel the attempt; the workflow sees ActivityCancelled at once."""
    WAIT_CANCELLATION_COMPLETED = "wait_cancellation_completed"
    """Ask, and wait until the body stopped and its attempt was recorded."""
    ABANDON = "abandon"
    """Ask nothing: the body runs on; the workflow sees ActivityCancelled at once."""


def activity_attrs(
    name: str,
    input: Any,
    *,
    queue: str | None,
    retry: RetryPolicy | None,
    start_to_close: Duration | None,
    schedule_to_close: Duration | None,
) -> dict[str, Any]:
    """The recorded attributes of an ActivityScheduled (without its id)."""
    attrs: dict[str, Any] = {
        "name": name,
        "input": checked_value(input, "activity input"),
    }
    if queue is not None:
        attrs["queue"] = queue
    if retry is not None:
        attrs["retry"] = retry.to_json()
    if start_to_close is not None:
        attrs["start_to_close"] = to_timedelta(start_to_close).total_seconds()
    if schedule_to_close is not None:
        attrs["schedule_to_close"] = to_timedelta(schedule_to_close).total_seconds()
    return attrs


class ActivityHandle:
    """An activity `ctx.start_activity` scheduled: ``await handle`` for its result, or `cancel()`."""

    def __init__(
        self,
        machine: Machine,
        attrs: dict[str, Any],
        result_type: Any,
        cancellation_type: ActivityCancellationType | str,
    ) -> None:
        """Use `ctx.start_activity(...)`: it schedules the activity (ActivityScheduled)."""
        try:
            self.cancellation_type = ActivityCancellationType(cancellation_type)
        except ValueError:
            kinds = ", ".join(t.name for t in ActivityCancellationType)
            raise ValueError(
                f"cancellation_type is one of {kinds}, got {cancellation_type!r}"
            ) from None
        self._machine = machine
        self._result_type = result_type
        self._future: asyncio.Future[Any] = machine.commands.schedule_activity(attrs)
        self.activity_id: int = machine.commands.last_activity_id
        """The activity's id in the run's history (its ActivityScheduled)."""
        self._cancel_requested = False

    def __await__(self) -> Generator[Any, None, Any]:
        """The activity's result (converted to its return type), or its error."""
        result = yield from self._future.__await__()
        return payloads.from_json(result, self._result_type)

    def done(self) -> bool:
        """Whether the handle has its outcome (a result, an error, or a cancel)."""
        return self._future.done()

    def cancel(self) -> bool:
        """Cancel the activity as `cancellation_type` says; False when it had ended or was cancelled."""
        if self._future.done() or self._cancel_requested:
            return False
        self._cancel_requested = True
        kind = self.cancellation_type
        commands = self._machine.commands
        if kind is not ActivityCancellationType.ABANDON:
            commands.emit(
                Command("ActivityCancelRequested", {"activity_id": self.activity_id})
            )
        if kind is not ActivityCancellationType.WAIT_CANCELLATION_COMPLETED:
            commands.forget_activity(self.activity_id)
            self._future.set_exception(
                ActivityCancelled(f"activity cancelled ({kind.name})")
            )
            # Retrieved: a cancelled handle nobody awaits is no lost error.
            self._future.exception()
        return True
