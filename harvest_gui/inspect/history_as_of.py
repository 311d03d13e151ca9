"""A run as it stood at one event of its history: status, payloads, pending items, query answers (no Qt)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harvest_engine import WorkflowReplayer

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from harvest_engine import HistoryEvent

ENDINGS = {  # the events that end a run, and the state each leaves
    "WorkflowCompleted": "COMPLETED",
    "WorkflowFailed": "FAILED",
    "WorkflowCancelled": "CANCELLED",
    "WorkflowExecutionTimedOut": "TIMED_OUT",
    "WorkflowContinuedAsNew": "CONTINUED_AS_NEW",
    "WorkflowTerminated": "TERMINATED",
}


@dataclass(frozen=True)
class PendingItem:
    """Something started and not yet finished at the chosen event.

    Attributes:
        kind: ``activity``, ``timer``, ``child``, ``update`` or ``mutex``.
        name: the activity or child workflow name, the timer id, the mutex key.
        since_seq: the event that started it.
        detail: one line for the table.

    """

    kind: str
    name: str
    since_seq: int
    detail: str


@dataclass(frozen=True)
class RunAsOf:
    """A run replayed up to and including event `seq`."""

    seq: int
    at: datetime | None
    event_type: str
    state: str
    input: Any = None
    output: Any = None
    error: Any = None
    search_attributes: dict[str, Any] = field(default_factory=dict)
    signals: list[tuple[int, str, Any]] = field(default_factory=list)
    results: list[tuple[int, str, Any]] = field(default_factory=list)
    pending: list[PendingItem] = field(default_factory=list)
    total_events: int = 0


def _id(attrs: dict[str, Any], *names: str) -> str:
    for name in names:
        if name in attrs:
            return str(attrs[name])
    return ""


def state_as_of(history: Sequence[HistoryEvent], seq: int) -> RunAsOf:
    """Fold events ``1..seq`` of `history` into what the run looked like then.

    Args:
        history: the run's events in order.
        seq: the last event to include (clamped to the history).

    """
    if not history:
        return RunAsOf(0, None, "", "EMPTY")
    seq = max(1, min(seq, history[-1].seq))
    state = "RUNNING"
    inp: Any = None
    output: Any = None
    error: Any = None
    attrs_seen: dict[str, Any] = {}
    signals: list[tuple[int, str, Any]] = []
    results: list[tuple[int, str, Any]] = []
    open_items: dict[tuple[str, str], PendingItem] = {}
    last = history[0]
    for event in history:
        if event.seq > seq:
            break
        last = event
        a = event.attrs
        t = event.type
        if t == "WorkflowStarted":
            inp = a.get("input")
            attrs_seen.update(a.get("search_attributes") or {})
        elif t in ENDINGS:
            state = ENDINGS[t]
            output = a.get("output")
            error = a.get("error") or a.get("reason")
        elif t == "SearchAttributesUpserted":
            attrs_seen.update(a.get("attributes") or {})
        elif t == "SignalReceived":
            signals.append((event.seq, str(a.get("name", "")), a.get("payload")))
        elif t in ("ActivityScheduled", "LocalActivityScheduled"):
            key = _id(a, "activity_id")
            name = str(a.get("name", ""))
            open_items[("activity", key)] = PendingItem(
                "activity", name, event.seq, f"{name} (activity {key}) scheduled"
            )
        elif t in (
            "ActivityCompleted",
            "ActivityFailed",
            "LocalActivityCompleted",
            "LocalActivityFailed",
            "LocalActivityExhausted",
        ):
            open_items.pop(("activity", _id(a, "activity_id")), None)
            value = a.get("result") if "Completed" in t else a.get("error")
            results.append(
                (event.seq, f"{a.get('name', '')} {t.removeprefix('Activity')}", value)
            )
        elif t == "TimerStarted":
            key = _id(a, "timer_id")
            open_items[("timer", key)] = PendingItem(
                "timer", key, event.seq, f"fires at {a.get('fire_at', '?')}"
            )
        elif t in ("TimerFired", "TimerCancelled"):
            open_items.pop(("timer", _id(a, "timer_id")), None)
        elif t == "ChildWorkflowStarted":
            key = _id(a, "command_id", "child_exec_id")
            name = str(a.get("workflow_name", ""))
            open_items[("child", key)] = PendingItem(
                "child", name, event.seq, f"child {name}"
            )
        elif t.startswith("ChildWorkflow") and t != "ChildWorkflowStarted":
            open_items.pop(("child", _id(a, "command_id", "child_exec_id")), None)
        elif t == "UpdateAdmitted":
            key = _id(a, "update_id", "id", "name")
            name = str(a.get("name", ""))
            open_items[("update", key)] = PendingItem(
                "update", name, event.seq, f"update {name}"
            )
        elif t in ("UpdateCompleted", "UpdateFailed"):
            open_items.pop(("update", _id(a, "update_id", "id", "name")), None)
        elif t == "MutexGranted":
            key = _id(a, "key")
            open_items[("mutex", key)] = PendingItem("mutex", key, event.seq, "held")
        elif t == "MutexReleased":
            open_items.pop(("mutex", _id(a, "key")), None)
    if state != "RUNNING":
        open_items = {}  # a closed run holds nothing: its seal released and dropped it all
    return RunAsOf(
        seq=last.seq,
        at=last.at,
        event_type=last.type,
        state=state,
        input=inp,
        output=output,
        error=error,
        search_attributes=attrs_seen,
        signals=signals,
        results=results,
        pending=sorted(open_items.values(), key=lambda p: p.since_seq),
        total_events=history[-1].seq,
    )


def query_as_of(
    workflows: Iterable[Any],
    history: Sequence[HistoryEvent],
    seq: int,
    name: str,
    arg: Any = None,
) -> Any:
    """Answer query `name(arg)` from the state the code had after event `seq` (writes nothing).

    Args:
        workflows: the workflow functions (or infos) the replay may need; the
            run's own workflow must be among them.
        history: the run's events in order.
        seq: the last event replayed.
        name: the query handler, as the body registered it by then.
        arg: the query's argument.

    Raises:
        QueryNotFound: no handler of that name was registered by event `seq`.
        UnknownWorkflow: the run's workflow is not among `workflows`.
        NonDeterminismDetected: the code no longer replays this history.
        Exception: whatever the handler itself raised.

    """
    # The signals a first drive appends before the body begins go in together,
    # as do those of a later drive (each but the last marked ``with_next``):
    # the body never ran between them, so a prefix ending inside that batch
    # is answered as of its end.
    while seq < len(history) and (
        _before_start(history[seq]) or _with_next(history[seq - 1])
    ):
        seq += 1
    prefix = [event for event in history if event.seq <= seq]
    return WorkflowReplayer(list(workflows)).query(prefix, name, arg)


def _before_start(event: HistoryEvent) -> bool:
    """A signal the first drive appended before the body began (engine: ``before_start``)."""
    return event.type == "SignalReceived" and event.attrs.get("before_start") is True


def _with_next(event: HistoryEvent) -> bool:
    """A signal a later drive appended with the next one (engine: ``with_next``)."""
    return event.type == "SignalReceived" and event.attrs.get("with_next") is True
