"""Cheap checks that a read serves sound data: a known state, a contiguous history, the right last event.

A run whose row or history fails them is damaged (a foreign writer, a
tampered file, a failing disk). A single-run read (describe, history,
outcome) raises `DatabaseCorrupt` for it; a listing keeps the row and says
why in `ExecutionSummary.damaged`, so one bad row never fails a page.

The listing checks cost two index probes per row (the last event's seq and
type); contiguity (every seq from 1 to the last) is checked as a history is
read, which walks the events anyway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import DatabaseCorrupt
from harvest_engine.events import TERMINAL_EVENTS, HistoryEvent
from harvest_engine.states import ALL_STATES, TERMINAL_STATES
from harvest_engine.timestamps import from_micros

if TYPE_CHECKING:
    import sqlite3
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


def database_path(conn: sqlite3.Connection) -> str:
    """The file a connection reads (for an error message); empty in memory."""
    for row in conn.execute("PRAGMA database_list"):
        if row[1] == "main":
            return str(row[2] or ":memory:")
    return "?"


def corrupt(conn: sqlite3.Connection, exec_id: str, reason: str) -> DatabaseCorrupt:
    """The error for a damaged run."""
    return DatabaseCorrupt(path=database_path(conn), reason=f"run {exec_id}: {reason}")


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


def check_run(conn: sqlite3.Connection, exec_id: str) -> None:
    """Raise DatabaseCorrupt when the run's row and history disagree (no-op for no row)."""
    row = conn.execute(
        f"SELECT state, workflow_name, workflow_id, {', '.join(LAST_EVENT_COLUMNS)} "
        "FROM harvest_executions WHERE exec_id = ?",
        (exec_id,),
    ).fetchone()
    if row is None:
        return
    state, name, workflow_id, next_seq, last_seq, last_type = row
    why = damage(state, next_seq, last_seq, last_type, (name, workflow_id))
    if why is not None:
        raise corrupt(conn, exec_id, why)


def events_from_rows(
    conn: sqlite3.Connection, exec_id: str, rows: list[Any], after_seq: int
) -> list[HistoryEvent]:
    """History events from (seq, type, at, attrs) rows, checking each and their order.

    Raises:
        DatabaseCorrupt: a seq is missing or repeated, or an event does not
            read (a bad time, attributes that are not a JSON object).
    """
    events: list[HistoryEvent] = []
    expected = after_seq + 1
    for seq, type_, at, attrs in rows:
        if seq != expected:
            raise corrupt(
                conn, exec_id, f"its history jumps from seq {expected - 1} to {seq!r}"
            )
        try:
            value = payloads.loads(attrs)
            if not isinstance(type_, str) or not isinstance(value, dict):
                raise TypeError("an event type and an attribute object are needed")
            events.append(
                HistoryEvent(seq=seq, type=type_, at=from_micros(at), attrs=value)
            )
        except (ValueError, TypeError, OverflowError, RecursionError) as exc:
            raise corrupt(conn, exec_id, f"event {seq} does not read ({exc})") from exc
        expected += 1
    return events
