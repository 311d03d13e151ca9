"""Commands: what workflow code asks the engine to do, and how each is matched on replay.

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
}


@dataclass
class Command:
    """One durable request of workflow code.

    Attributes:
        type: the history event type that records it.
        attrs: the attributes to record.
        future: resolved by the event that answers it (None when nothing waits).
        immediate: computes the recorded attrs' result live (side effects);
            on replay the recorded value is used and it is never called.
    """

    type: str
    attrs: dict[str, Any]
    future: asyncio.Future[Any] | None = None
    immediate: Callable[[], dict[str, Any]] | None = None
    on_recorded: Callable[[HistoryEvent], None] | None = field(default=None, repr=False)

    def matches(self, event: HistoryEvent) -> bool:
        """Whether a recorded event is this command."""
        if event.type != self.type:
            return False
        keys = MATCH_KEYS.get(self.type, ())
        return all(event.attrs.get(k) == self.attrs.get(k) for k in keys)

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
