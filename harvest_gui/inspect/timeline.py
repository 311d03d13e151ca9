"""A run's history (and activity attempts) turned into timeline lanes, bars and markers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harvest_gui.inspect.timeline_data import (
    Bar,
    Lane,
    Marker,
    Timeline,
    indexed_timeline,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from harvest_engine import ActivityAttempt, HistoryEvent

WORKFLOW_LANE = "workflow"
TIMERS_LANE = "timers"
SIGNALS_LANE = "signals & updates"
CHILDREN_LANE = "children"

# The data types live in timeline_data; they stay importable from here.
__all__ = [
    "CHILDREN_LANE",
    "SIGNALS_LANE",
    "TIMERS_LANE",
    "WORKFLOW_LANE",
    "Bar",
    "Lane",
    "Marker",
    "Timeline",
    "build_timeline",
]

_WORKFLOW_ENDS = {
    "WorkflowCompleted": "completed",
    "WorkflowFailed": "failed",
    "WorkflowCancelled": "cancelled",
    "WorkflowExecutionTimedOut": "timed_out",
    "WorkflowContinuedAsNew": "continued",
    "WorkflowTerminated": "terminated",
}
_MARKER_TYPES = {
    "SignalReceived": "signal",
    "UpdateAdmitted": "update",
    "UpdateCompleted": "update",
    "UpdateFailed": "update",
}

# An attempt's stored outcome (upper case, like run states) → the bar's result kind.
_ATTEMPT_RESULTS = {
    "COMPLETED": "completed",
    "FAILED": "failed",
    "TIMED_OUT": "timed_out",
    "LOST": "lost",
}


def _child_id(attrs: dict[str, Any], default: Any) -> Any:
    """A child run's exec id: ``child`` on its start, ``target`` on its end."""
    for key in ("child", "target", "child_exec_id"):
        if attrs.get(key):
            return attrs[key]
    return default


def _epoch(at: datetime) -> float:
    return at.timestamp()


def _text(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _parse_time(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return f"{error.get('type', 'Error')}: {error.get('message', '')}"
    if error is None:
        return ""
    return str(error)


class _Builder:
    def __init__(self) -> None:
        self.lanes: list[Lane] = []
        self.index: dict[str, int] = {}
        self.bars: list[Bar] = []
        self.markers: list[Marker] = []

    def lane(self, key: str, label: str, kind: str) -> int:
        found = self.index.get(key)
        if found is None:
            found = len(self.lanes)
            self.index[key] = found
            self.lanes.append(Lane(key, label, kind))
        return found


@dataclass
class _Activity:
    lane: int
    name: str
    scheduled_at: float
    scheduled_seq: int
    local: bool
    attempt_start: float
    ended: bool = False
    ends: dict[int, tuple[int, str, float, str]] = field(default_factory=dict)


def build_timeline(
    history: Sequence[HistoryEvent],
    attempts: Iterable[ActivityAttempt] = (),
    now: datetime | None = None,
) -> Timeline:
    """Turn a run's history into lanes, bars and markers.

    Args:
        history: the run's events in seq order (`load_history`).
        attempts: the run's activity attempts (`activity_attempts`); when an
            attempt is listed its real start and end times are used, else the
            bars span from scheduling (or the previous failure) to each result.
        now: where open spans (running workflow, pending activity, unfired
            timer) end; defaults to the last event's time.

    Returns:
        The timeline; an empty history gives no lanes.

    """
    b = _Builder()
    if not history:
        return Timeline([], [], [], 0.0, 0.0)
    first = _epoch(history[0].at)
    last = _epoch(history[-1].at)
    open_end = max(last, _epoch(now)) if now is not None else last
    workflow_lane = b.lane(WORKFLOW_LANE, WORKFLOW_LANE, "workflow")
    activities: dict[Any, _Activity] = {}
    timers: dict[Any, tuple[float, int, str]] = {}
    children: dict[Any, tuple[float, int, str]] = {}
    fire_at: dict[Any, float | None] = {}
    wf_start_seq = history[0].seq
    wf_name = "workflow"
    wf_result = "running"
    wf_end = open_end
    wf_end_detail = ""

    for event in history:
        at = _epoch(event.at)
        a = event.attrs
        kind = event.type
        if kind == "WorkflowStarted":
            wf_start_seq = event.seq
            wf_name = str(a.get("workflow_name", wf_name))
        elif kind in _WORKFLOW_ENDS:
            wf_result = _WORKFLOW_ENDS[kind]
            wf_end = at
            wf_end_detail = _error_text(a.get("error")) or _text(
                a.get("output", a.get("reason", ""))
            )
        elif kind in ("ActivityScheduled", "LocalActivityScheduled"):
            local = kind.startswith("Local")
            name = str(a.get("name", "?"))
            key = ("local:" if local else "activity:") + name
            label = f"{name} (local)" if local else name
            lane = b.lane(key, label, "local_activity" if local else "activity")
            act_key = (local, a.get("activity_id", event.seq))
            activities[act_key] = _Activity(lane, name, at, event.seq, local, at)
        elif kind in (
            "ActivityCompleted",
            "ActivityFailed",
            "LocalActivityCompleted",
            "LocalActivityFailed",
            "LocalActivityExhausted",
        ):
            local = kind.startswith("Local")
            act = activities.get((local, a.get("activity_id")))
            if act is None:
                continue
            attempt = int(a.get("attempt", len(act.ends) + 1) or 1)
            if kind.endswith("Completed"):
                result, detail = "completed", "result: " + _text(a.get("result"))
                act.ended = True
            else:
                error = a.get("error")
                timed_out = isinstance(error, dict) and "timeout" in str(
                    error.get("type", "")
                ).lower().replace("_", "")
                result = "timed_out" if timed_out else "failed"
                detail = _error_text(error)
                if not a.get("retrying", False) or kind.endswith("Exhausted"):
                    act.ended = True
            act.ends[attempt] = (event.seq, result, at, detail)
        elif kind == "TimerStarted":
            lane = b.lane(TIMERS_LANE, TIMERS_LANE, "timer")
            tid = a.get("timer_id", event.seq)
            timers[tid] = (at, event.seq, f"timer {tid}, {a.get('duration', '?')} s")
            fire_at[tid] = _parse_time(a.get("fire_at"))
        elif kind in ("TimerFired", "TimerCancelled"):
            started = timers.pop(a.get("timer_id"), None)
            if started is not None:
                lane = b.index[TIMERS_LANE]
                result = "fired" if kind == "TimerFired" else "cancelled"
                s_at, s_seq, label = started
                b.bars.append(
                    Bar(lane, s_at, at, result, label, s_seq, f"{label}: {result}")
                )
        elif kind in _MARKER_TYPES:
            lane = b.lane(SIGNALS_LANE, SIGNALS_LANE, "signal")
            name = str(a.get("name", a.get("update_name", "?")))
            payload = a.get("payload", a.get("arg", a.get("result")))
            mk = _MARKER_TYPES[kind]
            detail = f"{kind} {name}: {_text(payload)}"
            b.markers.append(Marker(lane, at, mk, name, event.seq, detail))
        elif kind == "ChildWorkflowStarted":
            lane = b.lane(CHILDREN_LANE, CHILDREN_LANE, "child")
            label = f"{a.get('workflow_name', 'child')} {_child_id(a, event.seq)}"
            children[a.get("command_id", _child_id(a, event.seq))] = (
                at,
                event.seq,
                label,
            )
        elif kind in ("ChildWorkflowCompleted", "ChildWorkflowFailed"):
            # The engine pairs them by command_id; the target is the child's id.
            key = a["command_id"] if "command_id" in a else _child_id(a, None)
            started = children.pop(key, None)
            if started is not None:
                lane = b.index[CHILDREN_LANE]
                result = "completed" if kind.endswith("Completed") else "failed"
                s_at, s_seq, label = started
                detail = (
                    _error_text(a.get("error"))
                    if result == "failed"
                    else "result: " + _text(a.get("result"))
                )
                b.bars.append(
                    Bar(lane, s_at, at, result, label, s_seq, f"{label}: {detail}")
                )

    for tid, (s_at, s_seq, label) in timers.items():
        lane = b.index[TIMERS_LANE]
        due = fire_at.get(tid)
        end = max(s_at, due if due is not None else open_end)
        open_end = max(open_end, end)
        b.bars.append(
            Bar(lane, s_at, end, "pending", label, s_seq, f"{label}: not fired yet")
        )
    for s_at, s_seq, label in children.values():
        lane = b.index[CHILDREN_LANE]
        b.bars.append(
            Bar(lane, s_at, open_end, "running", label, s_seq, f"{label}: running")
        )

    _activity_bars(b, activities, attempts, open_end)
    if wf_result == "running":
        wf_end = open_end
    b.bars.append(
        Bar(
            workflow_lane,
            _epoch(history[0].at),
            wf_end,
            wf_result,
            wf_name,
            wf_start_seq,
            f"{wf_name}: {wf_result}"
            + (f" — {wf_end_detail}" if wf_end_detail else ""),
        )
    )
    return indexed_timeline(b.lanes, b.bars, b.markers, first, max(open_end, wf_end))


def _activity_bars(
    b: _Builder,
    activities: dict[Any, _Activity],
    attempts: Iterable[ActivityAttempt],
    open_end: float,
) -> None:
    by_id: dict[int, list[ActivityAttempt]] = {}
    for att in attempts:
        by_id.setdefault(att.activity_id, []).append(att)
    for (local, activity_id), act in activities.items():
        rows = [] if local else by_id.get(activity_id, [])
        seen: set[int] = set()
        for row in sorted(rows, key=lambda r: r.attempt):
            seen.add(row.attempt)
            # A lost attempt's number is the re-run's too: the end event is the re-run's.
            end_info = None if row.outcome == "LOST" else act.ends.get(row.attempt)
            seq = end_info[0] if end_info else act.scheduled_seq
            start = _epoch(row.started_at)
            end = _epoch(row.ended_at) if row.ended_at is not None else open_end
            result = (
                _ATTEMPT_RESULTS.get(row.outcome, row.outcome)
                if row.ended_at is not None
                else "running"
            )
            if row.error is not None:
                detail = f"{row.error.type}: {row.error.message}"
            elif end_info and end_info[1] == result:
                # Only an attempt that ended the way the event says takes its text: a
                # killed attempt shares the re-run's number but not its result.
                detail = end_info[3]
            else:
                detail = result
            label = f"{act.name} #{row.attempt}"
            b.bars.append(
                Bar(
                    act.lane,
                    start,
                    max(start, end),
                    result,
                    label,
                    seq,
                    label + ": " + detail,
                )
            )
        cursor = act.scheduled_at
        for attempt in sorted(act.ends):
            seq, result, at, detail = act.ends[attempt]
            if attempt not in seen:
                label = f"{act.name} #{attempt}"
                b.bars.append(
                    Bar(
                        act.lane,
                        cursor,
                        max(cursor, at),
                        result,
                        label,
                        seq,
                        label + ": " + detail,
                    )
                )
            cursor = at
        if not act.ended and not any(r.ended_at is None for r in rows):
            label = f"{act.name} #{max([0, *act.ends, *seen]) + 1}"
            b.bars.append(
                Bar(
                    act.lane,
                    cursor,
                    max(cursor, open_end),
                    "pending",
                    label,
                    act.scheduled_seq,
                    label + ": not finished",
                )
            )
