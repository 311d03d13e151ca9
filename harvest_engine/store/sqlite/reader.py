"""SqliteReader: read a harvest file beside its live writer, mode=ro and without the lock."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from harvest_engine.errors import ExecutionNotFound
from harvest_engine.store.sql import listing
from harvest_engine.store.sql.dialect import SQLITE
from harvest_engine.store.sql.reads import SQLITE_READS
from harvest_engine.store.sql.run_views import RunViews
from harvest_engine.store.sql.schedules import SQLITE_SCHEDULES
from harvest_engine.store.sqlite import (
    readonly,
    verified_reads,
    verify,
)
from harvest_engine.store.sqlite.connection import ClosedConnection
from harvest_engine.store.sqlite.faults import guard_public_methods
from harvest_engine.store.sqlite.schema import HELD_STARTS_VERSION

if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from pathlib import Path

    from harvest_engine.codecs import PayloadCodec
    from harvest_engine.events import HistoryEvent
    from harvest_engine.states import ExecutionId
    from harvest_engine.store.records import ExecutionDetail
    from harvest_engine.store.sql.executes import Executes
    from harvest_engine.store.sqlite.readonly import ReadConnection


@guard_public_methods(bases=(RunViews,))
class SqliteReader(RunViews):
    """A read-only view of a harvest database file.

    Every public method raises typed errors only: `StorageError` when the
    file cannot be read, `DatabaseCorrupt` when what it reads is damaged.

    It opens the file ``mode=ro`` and takes no writer lock, so it works beside
    a runtime in another process; it never changes the file. `list_executions`,
    `visit_executions` and `describe` also read files of older schema
    versions (a column the file lacks reads as Null); the other reads expect
    the current schema.

    Use it as a context manager, or call `close()`.
    """

    def __init__(self, path: str, conn: ReadConnection, version: int) -> None:
        """Use `SqliteReader.open(path)`."""
        self.path = path
        self.schema_version = version
        self._conn = conn
        self._columns = readonly.table_columns(conn, "harvest_executions")
        self.closed = False
        super().__init__(SQLITE, SQLITE_READS, SQLITE_SCHEDULES, self._columns)

    @classmethod
    def open(
        cls, path: str | Path, *, codec: PayloadCodec | None = None
    ) -> SqliteReader:
        """Open a harvest file read-only.

        Raises:
            NotAHarvestDatabase: no such file, not SQLite, or not a harvest file.
            SchemaTooNew: the file was written by a newer harvest.
            CodecRequired: its payloads are encoded and `codec` is not their codec.
        """
        conn, version = readonly.open_read_only(path, codec=codec)
        return cls(str(path), conn, version)

    def close(self) -> None:
        """Close the connection (safe to call twice)."""
        if not self.closed:
            self.closed = True
            self._conn.close()
            self._conn = cast("ReadConnection", ClosedConnection(self.path))

    # -- change detection ---------------------------------------------------

    def data_version(self) -> int:
        """A number that changes whenever another connection commits to the file."""
        return readonly.data_version(self._conn)

    # -- runs -----------------------------------------------------------------

    def describe(self, exec_id: str | ExecutionId) -> ExecutionDetail:
        """One run with its payloads as Stored values.

        Raises:
            ExecutionNotFound: no run has this id.
            DatabaseCorrupt: the run is damaged (`ExecutionSummary.damaged`
                says why); an unreadable payload alone is a `Stored.Unreadable`.
        """
        text = str(exec_id).strip()
        with SQLITE.tolerant(self._conn), readonly.snapshot(self._conn):
            row = self._conn.execute(
                listing.describe_sql(SQLITE, self._columns), (text,)
            ).fetchone()
        detail = None if row is None else listing.detail_from_row(row)
        if detail is None:
            raise ExecutionNotFound(exec_id=exec_id)
        if detail.damaged is not None:
            raise verify.corrupt(self._conn, text, detail.damaged)
        return detail

    def load_history(self, exec_id: str | ExecutionId) -> list[HistoryEvent]:
        """Every recorded event of the run, in order.

        Raises:
            DatabaseCorrupt: the history has a gap, an unreadable event, or
                an end that does not match the run's state.
        """
        text = self._require(exec_id)
        with readonly.snapshot(self._conn):
            events = verified_reads.load_events(self._conn, text)
            verify.check_run(self._conn, text)
        return events

    def _reading(self) -> ReadConnection:
        return self._conn

    def _holds_starts(self) -> bool:
        return self.schema_version >= HELD_STARTS_VERSION

    def _snapshot(self, conn: Executes) -> AbstractContextManager[object]:
        return readonly.snapshot(self._conn)

    def _require(self, exec_id: str | ExecutionId) -> str:
        text = str(exec_id).strip() if exec_id is not None else ""
        if not text or not verified_reads.exists(self._conn, text):
            raise ExecutionNotFound(exec_id=exec_id)
        return text
