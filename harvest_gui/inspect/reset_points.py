"""Where a reset may start a run again: the decision boundaries of its history, said in words (no Qt).

The engine accepts `rt.reset(to_event=N)` only at a decision boundary: an
event after which the run held nothing open (every activity, timer, child,
awaited run and mutex it asked for by then has its answer). The time-travel
slider and the reset form say whether the chosen event is one before the
user confirms, instead of letting the engine refuse afterwards. The rule is
the engine's (harvest_engine/runtime/repairing/points.py), which the GUI
may not import; tests/gui/test_reset_points.py checks that both agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harvest_engine import HistoryEvent

TERMINAL = frozenset(
    {
        "WorkflowCompleted",
        "WorkflowFailed",
        "WorkflowCancelled",
        "WorkflowExecutionTimedOut",
        "WorkflowContinuedAsNew",
        "WorkflowTerminated",
    }
)
"""The events that end a run: a reset never starts at or after one."""

_OPENS = {
    "ActivityScheduled": ("activity", "activity_id"),
    "LocalActivityScheduled": ("activity", "activity_id"),
    "TimerStarted": ("timer", "timer_id"),
    "ChildWorkflowStarted": ("child", "command_id"),
    "ExternalWorkflowAwaited": ("await", "command_id"),
    "MutexRequested": ("mutex", "key"),
}
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


def reset_points(events: Sequence[HistoryEvent]) -> list[int]:
    """The seqs a reset may start from, ascending (none for a run never decided)."""
    if len(events) <= 1:
        return []
    found: list[int] = []
    open_: set[tuple[str, str]] = set()
    for event in events:
        if event.type in TERMINAL:
            break
        for table, add in ((_OPENS, True), (_CLOSES, False)):
            entry = table.get(event.type)
            if entry is None:
                continue
            key = (entry[0], str(event.attrs.get(entry[1])))
            if add:
                open_.add(key)
            else:
                open_.discard(key)
        if not open_:
            found.append(event.seq)
    return found


def point_text(events: Sequence[HistoryEvent], seq: int) -> tuple[bool, str]:
    """Whether a reset may start at event `seq`, and one line saying so (or why not)."""
    points = reset_points(events)
    if seq in points:
        return True, (
            f"A reset at event {seq} keeps events 1..{seq}; what follows is decided "
            "anew with today's code."
        )
    if not points:
        return False, "This run was never decided: there is no event to reset it to."
    last = events[-1].seq if events else 0
    if events and events[-1].type in TERMINAL and seq >= last:
        why = "it is the run's end"
    else:
        why = "the run held an activity, timer, child or mutex open there"
    before = [p for p in points if p < seq]
    after = [p for p in points if p > seq]
    near = ([before[-1]] if before else []) + ([after[0]] if after else [])
    where = (
        f"the nearest are events {near[0]} and {near[1]}"
        if len(near) == 2
        else f"the nearest is event {near[0]}"
    )
    return False, f"A reset cannot start at event {seq}: {why}; {where}."
