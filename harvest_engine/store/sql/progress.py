"""Progress rows of a run (events, streams, summary and current details), written and read once for both stores.

A decision writes them in its own transaction (`ProgressWrites`, a WriteTxn
part), so a decision that rolls back leaves no value a reader could see.
Readers (`ProgressSql.events`, `.event`, `.stream`) run on any connection:
the store's, SqliteReader's, PostgresReader's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.store.records import StreamItem
from harvest_engine.store.sql.dialect import POSTGRES, SQLITE, Dialect

if TYPE_CHECKING:
    from harvest_engine.store.sql.executes import Executes

# How many stream rows one read returns at most: a reader far behind pages.
STREAM_PAGE = 256


class ProgressSql:
    """One dialect's progress statements, rendered once (built at import)."""

    def __init__(self, dialect: Dialect) -> None:
        r = dialect.render
        self.set_event = r(
            "INSERT INTO harvest_run_events (exec_id, key, value, seq) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (exec_id, key) DO UPDATE SET value = excluded.value, "
            "seq = excluded.seq"
        )
        self.put_stream = r(
            "INSERT INTO harvest_streams (exec_id, key, position, value, closed) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
        )
        self.set_labels = r(
            "UPDATE harvest_executions SET summary = ?, details = ? WHERE exec_id = ?"
        )
        self.set_current = r(
            "UPDATE harvest_executions SET current_details = ? WHERE exec_id = ?"
        )
        self._events = r(
            "SELECT key, value FROM harvest_run_events WHERE exec_id = ? ORDER BY key"
        )
        self._event = r(
            "SELECT value FROM harvest_run_events WHERE exec_id = ? AND key = ?"
        )
        self._stream = r(
            "SELECT position, value, closed FROM harvest_streams "
            "WHERE exec_id = ? AND key = ? AND position >= ? ORDER BY position LIMIT ?"
        )

    def events(self, conn: Executes, exec_id: str) -> dict[str, Any]:
        """Every event of the run: key to its last value."""
        rows = conn.execute(self._events, (exec_id,)).fetchall()
        return {str(key): payloads.loads(value) for key, value in rows}

    def event(self, conn: Executes, exec_id: str, key: str) -> tuple[bool, Any]:
        """(whether the run set `key`, its value)."""
        row = conn.execute(self._event, (exec_id, key)).fetchone()
        return (False, None) if row is None else (True, payloads.loads(row[0]))

    def stream(
        self, conn: Executes, exec_id: str, key: str, offset: int
    ) -> list[StreamItem]:
        """The stream's rows from position `offset` on, in order (at most STREAM_PAGE)."""
        rows = conn.execute(
            self._stream, (exec_id, key, offset, STREAM_PAGE)
        ).fetchall()
        return [
            StreamItem(
                int(position),
                None if value is None else payloads.loads(value),
                bool(closed),
            )
            for position, value, closed in rows
        ]


SQLITE_PROGRESS = ProgressSql(SQLITE)
POSTGRES_PROGRESS = ProgressSql(POSTGRES)


class ProgressWrites(ABC):
    """The WriteTxn methods a decision writes progress rows with."""

    @property
    @abstractmethod
    def _progress(self) -> ProgressSql:
        """This store's progress statements (SQLITE_PROGRESS or POSTGRES_PROGRESS)."""

    @abstractmethod
    def _progress_conn(self) -> Executes:
        """The connection a progress statement runs on."""

    @abstractmethod
    def _progress_written(self, exec_id: str) -> None:
        """A reader of the run may be waiting: tell it at commit (Postgres: a notice)."""

    def set_run_event(self, exec_id: str, key: str, value: Any, seq: int) -> None:
        """Set event `key` of the run (the event at `seq` recorded it)."""
        self._progress_conn().execute(
            self._progress.set_event, (exec_id, key, payloads.dumps(value), seq)
        )
        self._progress_written(exec_id)

    def put_stream_item(
        self, exec_id: str, key: str, position: int, value: Any, *, closed: bool
    ) -> None:
        """Write a stream's value at `position`, or its closing row."""
        text = None if closed else payloads.dumps(value)
        self._progress_conn().execute(
            self._progress.put_stream, (exec_id, key, position, text, int(closed))
        )
        self._progress_written(exec_id)

    def set_run_labels(
        self, exec_id: str, summary: str | None, details: str | None
    ) -> None:
        """Label a run (StartOptions' summary and details)."""
        self._progress_conn().execute(
            self._progress.set_labels, (summary, details, exec_id)
        )

    def set_current_details(self, exec_id: str, text: str | None) -> None:
        """What the run says it is doing now (ctx.set_current_details)."""
        self._progress_conn().execute(self._progress.set_current, (text, exec_id))
        self._progress_written(exec_id)
