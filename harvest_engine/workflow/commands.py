"""Commands: what workflow code asks the engine to do, with how replay matches each.

Every durable call emits one numbered command. Live, the runtime records it
as a history event; on replay, the recorded event at the same place must be
the same command, or the run has diverged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harvest_engine.events import HistoryEvent

# The attributes that identify a command of each event type on replay.
MATCH_KEYS: dict[str, tuple[str, ...]] = {
    "ActivityScheduled": ("activity_id", "name"),
    "ActivityCancelRequested": ("activity_id",),
    "LocalActivityScheduled": ("activity_id", "name"),
    "TimerStarted": ("timer_id",),
    "TimerCancelled": ("timer_id",),
    "SideEffectRecorded": ("id",),
    "ChildWorkflowStarted": ("command_id", "workflow_name"),
    "ExternalSignalSent": ("command_id", "target", "name"),
    "ExternalCancelRequested": ("command_id", "target"),
    "MutexRequested": ("key",),
    "MutexReleased": ("key",),
    "SearchAttributesUpserted": ("attributes",),
    "ExternalWorkflowAwaited": ("command_id", "target"),
    "MarkerRecorded": ("patch_id",),
    "MemoUpserted": ("patch",),
    "EventSet": ("key",),
    "StreamWritten": ("key", "position"),
    "StreamClosed": ("key", "position"),
}

# Commands whose event the runtime writes through at once, inside the
# decision (a child's start, a signal or cancel to another run, a mutex
# queue place), so later commands of the same cycle see their effect.
EFFECT_COMMANDS = frozenset(
    {
        "ChildWorkflowStarted",
        "ExternalSignalSent",
        "ExternalCancelRequested",
        "MutexRequested",
        "MutexReleased",
    }
)


# The commands a solo rule (`solo_violation`) is about: a batch with none of
# them, while no local activity is outstanding, breaks no rule.
SOLO_COMMANDS = frozenset({"MutexRequested", "LocalActivityScheduled"})


@dataclass
class Command:
    """One durable request of workflow code.

    Attributes:
        type: the history event type that records it.
        attrs: the attributes to record.
        future: resolved by the event that answers it (None when nothing waits).
        answered: the recorded event's own attrs answer the future (the
            runtime's effect result live, the recorded attrs on replay).
        immediate: computes the recorded attrs' result live (side effects);
            on replay the recorded value is used and it is never called.
    """

    type: str
    attrs: dict[str, Any]
    future: asyncio.Future[Any] | None = None
    immediate: Callable[[], dict[str, Any]] | None = None
    on_recorded: Callable[[HistoryEvent], None] | None = field(default=None, repr=False)
    answered: bool = False

    @property
    def effect(self) -> bool:
        """Whether the runtime applies this command at once when it is recorded."""
        return self.type in EFFECT_COMMANDS

    def matches(self, event: HistoryEvent) -> bool:
        """Whether a recorded event is this command."""
        if event.type != self.type:
            return False
        recorded, emitted = event.attrs, self.attrs
        for key in MATCH_KEYS.get(self.type, ()):  # noqa: SIM110 -- hot: no generator per match
            if recorded.get(key) != emitted.get(key):
                return False
        return True

    def describe(self) -> str:
        """A short text naming the command, for divergence errors."""
        keys = MATCH_KEYS.get(self.type, ())
        shown = ", ".join(f"{k}={self.attrs.get(k)!r}" for k in keys)
        return f"{self.type}({shown})"


def describe_event(event: HistoryEvent) -> str:
    """A short text naming a recorded event, in the same shape as `Command.describe`."""
    keys = MATCH_KEYS.get(event.type, ())
    if not keys:
        return f"{event.type} (event {event.seq})"
    shown = ", ".join(f"{k}={event.attrs.get(k)!r}" for k in keys)
    return f"{event.type}({shown}) (event {event.seq})"


class CommandRejected(BaseException):
    """A command this backend rejects: the cycle rolls back and the run fails.

    A `BaseException`, so workflow code's ``except Exception:`` cannot hide
    it; the instance also remembers it, so even a swallowed one counts.
    """

    def __init__(self, feature: str, why: str) -> None:
        super().__init__(f"{feature} — {why}")
        self.feature = feature
        self.why = why


def solo_violation(
    batch: list[Command], marks: list[str], local_outstanding: bool
) -> tuple[str, str] | None:
    """The solo rule a batch of new commands breaks, as (feature, why), or None.

    A mutex acquire must be the only awaitable of its batch (a cancellable
    timer await, noted in `marks`, counts too); a local activity cannot
    share a batch with a durable awaitable or a second local activity, nor
    start a durable awaitable while a local activity is still running.
    """
    awaitables = [c for c in batch if c.future is not None]
    if (
        any(c.type == "MutexRequested" for c in batch)
        and len(awaitables) + len(marks) > 1
    ):
        return (
            "AcquireMutex",
            "a mutex acquire must be the only awaitable in its batch on this backend",
        )
    local = [c for c in batch if c.type == "LocalActivityScheduled"]
    if local and len(awaitables) > 1:
        return (
            "RunLocalActivity",
            "a local activity cannot share a batch with a durable awaitable or a "
            "second local activity on this backend",
        )
    if local_outstanding and awaitables:
        return (
            "RunLocalActivity",
            "a durable command was issued while a local activity is still running "
            "(e.g. from a signal handler between two attempts)",
        )
    return None
