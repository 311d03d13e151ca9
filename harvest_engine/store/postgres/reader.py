"""PostgresReader: read a harvest database on Postgres beside its live workers, read-only.

It mirrors `SqliteReader`: the same reads, the same records. Its session is
read-only (`default_transaction_read_only`), so it never changes the database,
and it takes no lock any worker waits for. psycopg is imported on `connect`,
so `import harvest_engine` works without the `postgres` extra.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from harvest_engine.errors import (
    DatabaseClosed,
    ExecutionNotFound,
    NotAHarvestDatabase,
    SchemaTooNew,
    Unsupported,
)
from harvest_engine.store.postgres.schema import SCHEMA_VERSION
from harvest_engine.store.sql.dialect import POSTGRES
from harvest_engine.store.sql.payload_columns import settle_codec
from harvest_engine.store.sql.reads import POSTGRES_READS
from harvest_engine.store.sql.run_views import RunViews
from harvest_engine.store.sql.schedules import POSTGRES_SCHEDULES

if TYPE_CHECKING:
    from collections.abc import Iterator

    import psycopg

    from harvest_engine.codecs import PayloadCodec
    from harvest_engine.events import HistoryEvent
    from harvest_engine.states import ExecutionId
    from harvest_engine.store.records import ExecutionDetail
    from harvest_engine.store.sql.executes import Executes

INSTALL_HINT = "psycopg is not installed: pip install 'harvest[postgres]'"


class PostgresReader(RunViews):
    """A read-only view of a harvest database on Postgres (see `SqliteReader`).

    Use it as a context manager, or call `close()`.
    """

    def __init__(
        self, path: str, conn: psycopg.Connection[tuple[Any, ...]], version: int
    ) -> None:
        """Use `PostgresReader.connect(dsn)`."""
        self.path = path
        self.schema_version = version
        self._conn = conn
        self.closed = False
        super().__init__(POSTGRES, POSTGRES_READS, POSTGRES_SCHEDULES)

    @classmethod
    def connect(cls, dsn: str, *, codec: PayloadCodec | None = None) -> PostgresReader:
        """Connect read-only to a harvest database.

        Raises:
            NotAHarvestDatabase: a wrong DSN, an unreachable server, a missing
                database, or one without a harvest schema.
            SchemaTooNew: a newer harvest wrote the schema.
            CodecRequired: its payloads are encoded and `codec` is not their codec.
            Unsupported: psycopg (the `postgres` extra) is not installed.
        """
        try:
            import psycopg  # noqa: PLC0415

            from harvest_engine.store.postgres.connection import (  # noqa: PLC0415
                connect,
                redact,
            )
            from harvest_engine.store.postgres.migrations import (  # noqa: PLC0415
                read_version,
            )
        except ImportError as exc:
            raise Unsupported(feature="Postgres", why=INSTALL_HINT) from exc
        conn = connect(dsn, codec)
        where = redact(dsn)
        try:
            conn.execute("SET default_transaction_read_only = on")
            version = read_version(conn)
        except psycopg.Error as exc:
            conn.close()
            raise NotAHarvestDatabase(path=where, reason=str(exc).strip()) from exc
        if version == 0:
            conn.close()
            raise NotAHarvestDatabase(path=where, reason="it has no harvest schema")
        if version > SCHEMA_VERSION:
            conn.close()
            raise SchemaTooNew(path=where, found=version, supported=SCHEMA_VERSION)
        try:
            settle_codec(conn, where, codec, write=False, mark="%s")
        except BaseException:
            conn.close()
            raise
        return cls(where, conn, version)

    def close(self) -> None:
        """Close the connection (safe to call twice)."""
        if not self.closed:
            self.closed = True
            self._conn.close()

    def _reading(self) -> psycopg.Connection[tuple[Any, ...]]:
        return self._live()

    @contextmanager
    def _snapshot(self, conn: Executes) -> Iterator[None]:
        # One repeatable-read transaction: every statement sees one snapshot.
        live = self._live()
        with live.transaction():
            live.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield

    def _live(self) -> psycopg.Connection[tuple[Any, ...]]:
        if self.closed:
            raise DatabaseClosed(path=self.path)
        return self._conn

    # -- change detection ---------------------------------------------------

    def data_version(self) -> int:
        """A number that changes whenever a worker commits a write to the database."""
        row = (
            self._live()
            .execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint")
            .fetchone()
        )
        return int(row[0]) if row is not None else 0

    # -- runs -----------------------------------------------------------------

    def describe(self, exec_id: str | ExecutionId) -> ExecutionDetail:
        """One run with its payloads as Stored values."""
        detail = POSTGRES_READS.describe(self._live(), str(exec_id).strip())
        if detail is None:
            raise ExecutionNotFound(exec_id=str(exec_id))
        return detail

    def load_history(self, exec_id: str | ExecutionId) -> list[HistoryEvent]:
        """Every recorded event of the run, in order."""
        return POSTGRES_READS.load_events(self._live(), self._require(exec_id))

    def _require(self, exec_id: str | ExecutionId) -> str:
        text = str(exec_id).strip() if exec_id is not None else ""
        if not text or POSTGRES_READS.execution(self._live(), text) is None:
            raise ExecutionNotFound(exec_id=str(exec_id))
        return text
