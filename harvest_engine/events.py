"""History events and their stable JSON encoding.

An event is `(seq, type, at, attrs)`: `seq` is 1-based and contiguous per
run, `type` a CamelCase name, `at` an aware datetime and `attrs` a JSON
object. `to_json()` is canonical (sorted keys, compact, microsecond UTC
times), so a stored history is byte-stable and golden files can freeze it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from harvest_engine import payloads
from harvest_engine.timestamps import from_text, to_text

# Events that a workflow command produces; replay matches them, in order,
# against the commands the code emits.
COMMAND_EVENTS = frozenset(
    {
        "ActivityScheduled",
        "ActivityCancelRequested",
        "LocalActivityScheduled",
        "TimerStarted",
        "TimerCancelled",
        "SideEffectRecorded",
        "ChildWorkflowStarted",
        "ExternalSignalSent",
        "ExternalCancelRequested",
        "ExternalWorkflowAwaited",
        "MutexRequested",
        "MutexReleased",
        "SearchAttributesUpserted",
        "MarkerRecorded",
        "MemoUpserted",
        "EventSet",
        "StreamWritten",
        "StreamClosed",
    }
)

IMPOSED = "imposed"
"""A WorkflowCancelled attribute, true when the run was sealed from outside its body.

Terminate, a cancel from another run, a replace and a cascade of the run's own
command end it at once, wherever it was parked: its body never saw a cancel
request, so replay shows it none and does not ask it to have ended.
"""

# Events that end a run.
TERMINAL_EVENTS = frozenset(
    {
        "WorkflowCompleted",
        "WorkflowFailed",
        "WorkflowCancelled",
        "WorkflowExecutionTimedOut",
        "WorkflowContinuedAsNew",
        "WorkflowTerminated",
    }
)


@dataclass(frozen=True, init=False)
class HistoryEvent:
    """One recorded event of a run's history.

    Attributes:
        seq: 1-based position in the run's history, contiguous.
        type: CamelCase event type, e.g. ``"ActivityCompleted"``.
        at: when it was recorded (aware UTC datetime).
        attrs: the event's JSON attributes.
    """

    seq: int
    type: str
    at: datetime
    attrs: dict[str, Any] = field(default_factory=dict)

    def __init__(
        self, seq: int, type: str, at: datetime, attrs: dict[str, Any] | None = None
    ) -> None:
        # Every event of every cycle is built here: one write to the
        # instance's dict instead of a frozen dataclass's four setattr calls.
        fields = self.__dict__
        fields["seq"] = seq
        fields["type"] = type
        fields["at"] = at
        fields["attrs"] = {} if attrs is None else attrs

    def to_json(self) -> str:
        """The canonical JSON text of this event."""
        return payloads.dumps(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        """The event as a JSON object."""
        return {
            "seq": self.seq,
            "type": self.type,
            "at": to_text(self.at),
            "attrs": self.attrs,
        }

    @classmethod
    def from_json(cls, text: str | bytes | dict[str, Any]) -> HistoryEvent:
        """Parse `to_json()` output (or the same object already decoded)."""
        data = payloads.loads(text) if isinstance(text, (str, bytes)) else text
        return cls(
            seq=int(data["seq"]),
            type=str(data["type"]),
            at=from_text(str(data["at"])),
            attrs=dict(data.get("attrs") or {}),
        )

    @property
    def is_command(self) -> bool:
        """Whether replay matches this event against an emitted command."""
        return self.type in COMMAND_EVENTS

    def summary(self) -> str:
        """A one-line description for tables and CLIs."""
        a = self.attrs
        name = (
            a.get("name")
            or a.get("timer_id")
            or a.get("activity_id")
            or a.get("patch_id")
        )
        bits = [str(name)] if name is not None else []
        if "error" in a and isinstance(a["error"], dict):
            bits.append(str(a["error"].get("message", ""))[:80])
        return " ".join(bits)


def history_to_json(events: list[HistoryEvent]) -> str:
    """A whole history as one JSON document (what `harvest history --json` writes)."""
    return payloads.dumps({"events": [e.to_dict() for e in events]})


def history_from_json(text: str | bytes) -> list[HistoryEvent]:
    """Parse `history_to_json` output, or a bare JSON list of events."""
    data = payloads.loads(text)
    items = data["events"] if isinstance(data, dict) else data
    return [HistoryEvent.from_json(item) for item in items]
