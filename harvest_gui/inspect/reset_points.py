"""Where a reset may start a run again: the decision boundaries of its history, said in words (no Qt).

The engine accepts `rt.reset(to_event=N)` only at a decision boundary: an
event after which the run held nothing open (every activity, timer, child,
awaited run and mutex it asked for by then has its answer). The time-travel
slider and the reset form say whether the chosen event is one before the
user confirms, instead of letting the engine refuse afterwards; the points
come from the engine's own rule, `harvest_engine.reset_points`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine import reset_points
from harvest_gui.inspect.history_as_of import ENDINGS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harvest_engine import HistoryEvent


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
    if events and events[-1].type in ENDINGS and seq >= last:
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
