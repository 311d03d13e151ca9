"""SQLite's single-run checks: a damaged run raises DatabaseCorrupt naming the file.

A run whose row or history fails the rule of store/sql/verify.py (a foreign
writer, a tampered file, a failing disk) is refused by a single-run read
(describe, history, outcome). Contiguity (every seq from 1 to the last) is
checked as a history is read, which walks the events anyway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import DatabaseCorrupt
from harvest_engine.events import HistoryEvent
from harvest_engine.store.sql.verify import LAST_EVENT_COLUMNS, damage
from harvest_engine.timestamps import from_micros

if TYPE_CHECKING:
    import sqlite3


def database_path(conn: sqlite3.Connection) -> str:
    """The file a connection reads (for an error message); empty in memory."""
    for row in conn.execute("PRAGMA database_list"):
        if row[1] == "main":
            return str(row[2] or ":memory:")
    return "?"


def corrupt(conn: sqlite3.Connection, exec_id: str, reason: str) -> DatabaseCorrupt:
    """The error for a damaged run."""
    return DatabaseCorrupt(path=database_path(conn), reason=f"run {exec_id}: {reason}")


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
