"""The SQLite reads that check what they read: a damaged run raises DatabaseCorrupt.

A file any process can write may hold a row that does not read or a history
with a gap; the store and the reader read runs through these (the shared
statements and converters are store/sql's), so a damaged run is named, not
replayed wrong.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.store.sql.columns import detail_from_row, execution_from_row
from harvest_engine.store.sql.reads import SQLITE_READS
from harvest_engine.store.sqlite import verify

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence

    from harvest_engine.events import HistoryEvent
    from harvest_engine.store.records import ExecutionDetail
    from harvest_engine.store.rows import ExecutionRecord


def execution(conn: sqlite3.Connection, exec_id: str) -> ExecutionRecord | None:
    """One run's row."""
    row = conn.execute(SQLITE_READS.execution_sql, (exec_id,)).fetchone()
    if row is None:
        return None
    try:
        return execution_from_row(row)
    except (ValueError, TypeError, OverflowError) as exc:
        raise verify.corrupt(conn, exec_id, f"its row does not read ({exc})") from exc


def claimed_task_ids(conn: sqlite3.Connection, task_ids: Sequence[int]) -> set[int]:
    """Which of `task_ids` are RUNNING tasks (a claim not yet recorded nor dropped)."""
    found: set[int] = set()
    ids = list(task_ids)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT id FROM harvest_tasks WHERE status = 'RUNNING' AND id IN ({marks})",
            chunk,
        ).fetchall()
        found.update(r[0] for r in rows)
    return found


def exists(conn: sqlite3.Connection, exec_id: str) -> bool:
    """Whether a run with this id exists."""
    return SQLITE_READS.exists(conn, exec_id)


def load_events(
    conn: sqlite3.Connection, exec_id: str, after_seq: int = 0
) -> list[HistoryEvent]:
    """A run's events after `after_seq`, in order."""
    rows = conn.execute(SQLITE_READS.events_sql, (exec_id, after_seq)).fetchall()
    return verify.events_from_rows(conn, exec_id, rows, after_seq)


def describe(conn: sqlite3.Connection, exec_id: str) -> ExecutionDetail | None:
    """One run with payloads as Stored values; DatabaseCorrupt for a damaged run."""
    row = conn.execute(SQLITE_READS.describe_sql, (exec_id,)).fetchone()
    if row is None:
        return None
    verify.check_run(conn, exec_id)
    try:
        return detail_from_row(row)
    except (ValueError, TypeError, OverflowError) as exc:
        raise verify.corrupt(conn, exec_id, f"its row does not read ({exc})") from exc
