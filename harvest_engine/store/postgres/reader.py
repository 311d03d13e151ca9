"""PostgresReader: read a harvest database on Postgres beside its live workers, read-only.

It mirrors `SqliteReader`: the same reads, the same records. Its session is
read-only (`default_transaction_read_only`), so it never changes the database,
and it takes no lock any worker waits for. psycopg is imported on `connect`,
so `import harvest_engine` works without the `postgres` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.errors import (
    DatabaseClosed,
    ExecutionNotFound,
    NotAHarvestDatabase,
    SchemaTooNew,
    Unsupported,
)
from harvest_engine.store.postgres.schema import SCHEMA_VERSION
from harvest_engine.store.reader import _filter
from harvest_engine.store.sql import listing
from harvest_engine.store.sql.dialect import POSTGRES
from harvest_engine.store.sql.reads import POSTGRES_READS
from harvest_engine.store.sql.schedules import POSTGRES_SCHEDULES

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

    import psycopg

    from harvest_engine.events import HistoryEvent
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.states import ExecutionId
    from harvest_engine.store.operations import LedgerTotals, ScheduleRow
    from harvest_engine.store.records import (
        ActivityAttempt,
        ExecutionDetail,
        ExecutionPage,
        LedgerRow,
        LogLine,
        MutexRow,
        PendingTask,
        StagedSignal,
        TimerRow,
    )

INSTALL_HINT = "psycopg is not installed: pip install 'harvest[postgres]'"


class PostgresReader:
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

    @classmethod
    def connect(cls, dsn: str) -> PostgresReader:
        """Connect read-only to a harvest database.

        Raises:
            NotAHarvestDatabase: a wrong DSN, an unreachable server, a missing
                database, or one without a harvest schema.
            SchemaTooNew: a newer harvest wrote the schema.
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
        conn = connect(dsn)
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
        return cls(where, conn, version)

    def close(self) -> None:
        """Close the connection (safe to call twice)."""
        if not self.closed:
            self.closed = True
            self._conn.close()

    def __enter__(self) -> PostgresReader:
        """Use the reader in a `with` block; it closes at the end."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the reader."""
        self.close()

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

    def list_executions(self, flt: ExecutionFilter | None = None) -> ExecutionPage:
        """One page of runs, newest first, without payloads.

        Raises:
            InvalidFilter: `flt` is not an ExecutionFilter.
        """
        return listing.list_executions(self._live(), POSTGRES, _filter(flt))

    def visit_executions(
        self, flt: ExecutionFilter | None, fn: Callable[[ExecutionDetail], object]
    ) -> int | None:
        """Call `fn` on each run `list_executions(flt)` would return, with its payloads.

        Every row comes from one snapshot (one statement); `fn`'s return value
        is ignored.

        Returns:
            The cursor of the next page, or None at the end.
        """
        chosen = _filter(flt)
        conn = self._live()
        last: int | None = None
        count = 0
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            for detail in listing.visit_executions(conn, POSTGRES, chosen):
                fn(detail)
                last = detail.cursor
                count += 1
            more = (
                count == chosen.page_size
                and last is not None
                and bool(
                    listing.list_executions(
                        conn, POSTGRES, chosen.before(last).limit(1)
                    ).executions
                )
            )
        return last if more else None

    def describe(self, exec_id: str | ExecutionId) -> ExecutionDetail:
        """One run with its payloads as Stored values."""
        detail = POSTGRES_READS.describe(self._live(), str(exec_id).strip())
        if detail is None:
            raise ExecutionNotFound(exec_id=str(exec_id))
        return detail

    def counts_by_state(self) -> dict[str, int]:
        """How many runs are in each state (every state present, maybe 0)."""
        return listing.counts_by_state(self._live(), POSTGRES)

    def load_history(self, exec_id: str | ExecutionId) -> list[HistoryEvent]:
        """Every recorded event of the run, in order."""
        return POSTGRES_READS.load_events(self._live(), self._require(exec_id))

    def activity_attempts(
        self, exec_id: str | ExecutionId, name: str | None = None
    ) -> list[ActivityAttempt]:
        """Finished attempts of the run's activities (of one name, or all)."""
        return POSTGRES_READS.activity_attempts(
            self._live(), self._require(exec_id), name
        )

    def pending_tasks(self, exec_id: str | ExecutionId) -> list[PendingTask]:
        """The run's unfinished activity tasks."""
        return POSTGRES_READS.pending_tasks(self._live(), self._require(exec_id))

    def timers(self, exec_id: str | ExecutionId) -> list[TimerRow]:
        """The run's unfired timers, soonest first."""
        return POSTGRES_READS.timers(self._live(), self._require(exec_id))

    def staged_signals(self, exec_id: str | ExecutionId) -> list[StagedSignal]:
        """Signals delivered to the run that its history has not yet taken in."""
        return POSTGRES_READS.staged_signals(self._live(), self._require(exec_id))

    def mutexes(self, exec_id: str | ExecutionId) -> list[MutexRow]:
        """Mutex keys the run holds or waits for."""
        return POSTGRES_READS.mutexes(self._live(), self._require(exec_id))

    # -- costs and logs ---------------------------------------------------------

    def llm_ledger(self, exec_id: str | ExecutionId) -> list[LedgerRow]:
        """The run's LLM calls, in recording order."""
        return POSTGRES_READS.llm_ledger(self._live(), self._require(exec_id))

    def llm_totals(self, exec_id: str | ExecutionId) -> LedgerTotals:
        """The run's LLM calls summed: calls, tokens in and out, latency."""
        return POSTGRES_READS.llm_totals(self._live(), self._require(exec_id))

    def workflow_logs(self, exec_id: str | ExecutionId) -> list[LogLine]:
        """The run's `ctx.log` lines in order; a truncation marker comes last."""
        return POSTGRES_READS.workflow_logs(self._live(), self._require(exec_id))

    def count_workflow_logs(self, exec_id: str | ExecutionId) -> int:
        """How many log lines the run kept (the truncation marker not counted)."""
        return sum(1 for line in self.workflow_logs(exec_id) if not line.marker)

    def workflow_log_truncated(self, exec_id: str | ExecutionId) -> bool:
        """Whether the run's log dropped lines past its `max_lines`."""
        return any(line.marker for line in self.workflow_logs(exec_id))

    # -- schedules --------------------------------------------------------------

    def list_schedules(self) -> list[ScheduleRow]:
        """Every stored schedule, by workflow name (a damaged one has `problem` set)."""
        return POSTGRES_SCHEDULES.list_all(self._live())

    def _require(self, exec_id: str | ExecutionId) -> str:
        text = str(exec_id).strip() if exec_id is not None else ""
        if not text or POSTGRES_READS.execution(self._live(), text) is None:
            raise ExecutionNotFound(exec_id=str(exec_id))
        return text
