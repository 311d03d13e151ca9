"""The rule a listing flags damaged rows by: a known state, the last event where the row says.

A run whose row and history disagree was written by a foreign writer or a
failing disk. A listing keeps such a row and says why in
`ExecutionSummary.damaged`, so one bad row never fails a page; the check
costs two index probes per row (the last event's seq and type).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.events import TERMINAL_EVENTS
from harvest_engine.states import ALL_STATES, TERMINAL_STATES

if TYPE_CHECKING:
    from collections.abc import Iterable

LAST_EVENT_COLUMNS = (
    "next_seq",
    "(SELECT MAX(ev.seq) FROM harvest_events ev "
    "WHERE ev.exec_id = harvest_executions.exec_id) AS last_seq",
    "(SELECT ev.type FROM harvest_events ev WHERE ev.exec_id = harvest_executions.exec_id "
    "ORDER BY ev.seq DESC LIMIT 1) AS last_type",
)
"""Selected after a listing's columns: what `damage` compares the row with."""

# What a closed run's history may end with: a closing event, or the retry
# that a failed run's successor carries on from.
CLOSING_EVENTS = TERMINAL_EVENTS | {"WorkflowRetryScheduled"}


def damage(
    state: Any,
    next_seq: Any,
    last_seq: Any,
    last_type: Any,
    texts: Iterable[Any] = (),
) -> str | None:
    """Why a run's row does not match its history, or None when it is sound.

    Args:
        state: the row's state column.
        next_seq: the row's next_seq column (the seq its next event gets).
        last_seq: the highest seq among its events (None without events).
        last_type: that event's type.
        texts: text columns that must read as text (ids, names).
    """
    if not isinstance(state, str) or state not in ALL_STATES:
        return f"unknown state {state!r}"
    for text in texts:
        if not isinstance(text, str) or not text:
            return "an id or name is not readable text"
    if last_seq is None:
        return "it has no history"
    if not isinstance(next_seq, int) or last_seq != next_seq - 1:
        return f"its history ends at seq {last_seq}, its row expects {next_seq}"
    closed = state in TERMINAL_STATES
    if closed and last_type not in CLOSING_EVENTS:
        return (
            f"it is {state} but its history ends with {last_type}, not a closing event"
        )
    if not closed and last_type in CLOSING_EVENTS:
        return f"it is {state} but its history ends with {last_type}"
    return None
