"""Where a run can start again: the decision boundaries of a history, a reset's and a fork's cut.

Pure functions of the stored events (no store, no code). A *decision
boundary* is an event N before the run's end after which the run held
nothing open: every activity, local activity, timer, attached child,
awaited run and mutex asked for in events 1..N has its answer there too.
A new run whose history is events 1..N therefore needs no task, timer or
child row to go on: its first decision replays them with today's code and
the code asks anew for whatever comes next.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors import InvalidResetPoint, NotResettable
from harvest_engine.events import TERMINAL_EVENTS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harvest_engine.events import HistoryEvent

# type -> (kind, the attribute naming it) of an event that opens a wait ...
_OPENS = {
    "ActivityScheduled": ("activity", "activity_id"),
    "LocalActivityScheduled": ("activity", "activity_id"),
    "TimerStarted": ("timer", "timer_id"),
    "ChildWorkflowStarted": ("child", "command_id"),
    "ExternalWorkflowAwaited": ("await", "command_id"),
    "MutexRequested": ("mutex", "key"),
}
# ... and of one that answers it.
_CLOSES = {
    "ActivityCompleted": ("activity", "activity_id"),
    "ActivityFailed": ("activity", "activity_id"),
    "LocalActivityCompleted": ("activity", "activity_id"),
    "LocalActivityExhausted": ("activity", "activity_id"),
    "TimerFired": ("timer", "timer_id"),
    "TimerCancelled": ("timer", "timer_id"),
    "ChildWorkflowCompleted": ("child", "command_id"),
    "ChildWorkflowFailed": ("child", "command_id"),
    "ExternalWorkflowCompleted": ("await", "command_id"),
    "ExternalWorkflowFailed": ("await", "command_id"),
    "MutexReleased": ("mutex", "key"),
}

STEP_EVENTS = frozenset({"ActivityScheduled", "LocalActivityScheduled"})
"""The events that number a run's steps for `fork(from_step=)` (1-based, in order)."""


def boundaries(events: Sequence[HistoryEvent]) -> list[int]:
    """The seqs of every decision boundary of `events`, ascending (1 is always one)."""
    found: list[int] = []
    open_: set[tuple[str, str]] = set()
    for event in events:
        if event.type in TERMINAL_EVENTS:
            break
        key = _key(event, _OPENS)
        if key is not None:
            open_.add(key)
        key = _key(event, _CLOSES)
        if key is not None:
            open_.discard(key)
        if not open_:
            found.append(event.seq)
    return found


def reset_points(events: Sequence[HistoryEvent]) -> list[int]:
    """The event seqs `reset(to_event=)` accepts for this history, ascending.

    Public, so a tool (the inspector's time-travel slider, a web page) can
    offer only the points a reset takes instead of learning it from a
    refusal; empty for a run never decided (its history is its start).
    """
    return [] if len(events) <= 1 else boundaries(events)


def _key(
    event: HistoryEvent, table: dict[str, tuple[str, str]]
) -> tuple[str, str] | None:
    entry = table.get(event.type)
    if entry is None:
        return None
    kind, attr = entry
    return kind, str(event.attrs.get(attr))


def check_decided(exec_id: str, events: Sequence[HistoryEvent]) -> None:
    """NotResettable when the run has no decision to go back to."""
    if len(events) <= 1:
        raise NotResettable(
            exec_id=exec_id, reason="it was never decided (its history is its start)"
        )


def reset_point(
    exec_id: str,
    events: Sequence[HistoryEvent],
    to_event: int | None,
    failed_attempt_ids: Sequence[int] = (),
) -> int:
    """The last event a reset keeps: `to_event` checked, or the default point.

    The default is the boundary just before the first attempt of the last
    failed activity (an ActivityFailed in the history, or an attempt that
    failed and has no answer yet, `failed_attempt_ids`); for a run with no
    failed activity it is the last decision boundary (a run failed in its own
    code goes back to its last decision).

    Raises:
        NotResettable: the run was never decided.
        InvalidResetPoint: `to_event` is not a decision boundary.
    """
    check_decided(exec_id, events)
    points = boundaries(events)
    if to_event is not None:
        if isinstance(to_event, bool) or not isinstance(to_event, int):
            raise InvalidResetPoint(
                exec_id=exec_id,
                point=repr(to_event),
                reason="to_event is an event seq (an int)",
            )
        if to_event not in points:
            raise InvalidResetPoint(
                exec_id=exec_id,
                point=f"event {to_event}",
                reason=_not_boundary(events, to_event, points),
            )
        return to_event
    scheduled = _last_failed_scheduled(events, failed_attempt_ids)
    if scheduled is not None:
        return max(p for p in points if p < scheduled)
    return points[-1]


def _not_boundary(events: Sequence[HistoryEvent], seq: int, points: list[int]) -> str:
    last = events[-1].seq if events else 0
    near = ", ".join(str(p) for p in points[-8:])
    if seq < 1 or seq > last:
        why = f"the history has events 1..{last}"
    elif events[-1].type in TERMINAL_EVENTS and seq >= last:
        why = "it is the run's end"
    else:
        why = "the run held an activity, timer, child or mutex open there"
    return f"{why}; the decision boundaries are {near}"


def _last_failed_scheduled(
    events: Sequence[HistoryEvent], failed_attempt_ids: Sequence[int]
) -> int | None:
    """The seq of the ActivityScheduled of the last failed activity, if any failed."""
    scheduled: dict[int, int] = {}
    completed: set[int] = set()
    failed: list[int] = []
    for event in events:
        activity_id = event.attrs.get("activity_id")
        if not isinstance(activity_id, int):
            continue
        if event.type in STEP_EVENTS:
            scheduled[activity_id] = event.seq
        elif event.type in ("ActivityFailed", "LocalActivityExhausted"):
            failed.append(activity_id)
        elif event.type in ("ActivityCompleted", "LocalActivityCompleted"):
            completed.add(activity_id)
    failed += [a for a in failed_attempt_ids if a not in completed]
    seqs = [scheduled[a] for a in failed if a in scheduled]
    return max(seqs) if seqs else None


def fork_point(exec_id: str, events: Sequence[HistoryEvent], from_step: int) -> int:
    """The last event a fork from step `from_step` keeps (1 starts afresh).

    The boundary just before the step's ActivityScheduled: the results of
    the steps before it stay, the step and the ones after run again.

    Raises:
        InvalidResetPoint: `from_step` is not a step of the run (past its history).
    """
    if isinstance(from_step, bool) or not isinstance(from_step, int):
        raise InvalidResetPoint(
            exec_id=exec_id,
            point=repr(from_step),
            reason="from_step is a step number (an int)",
        )
    steps = [
        e.seq for e in events if e.type in STEP_EVENTS and e.type not in TERMINAL_EVENTS
    ]
    if not 1 <= from_step <= len(steps):
        raise InvalidResetPoint(
            exec_id=exec_id,
            point=f"step {from_step}",
            reason=f"the run has steps 1..{len(steps)}"
            if steps
            else "the run has no step",
        )
    scheduled = steps[from_step - 1]
    return max(p for p in boundaries(events) if p < scheduled)
