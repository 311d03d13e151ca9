"""SqliteReader: read a harvest file beside its live writer, mode=ro and without the lock."""

from __future__ import annotations

from contextlib import closing
from typing import TYPE_CHECKING, cast

from harvest_engine.errors import ExecutionNotFound, InvalidFilter
from harvest_engine.filters import ExecutionFilter
from harvest_engine.store.sql import listing
from harvest_engine.store.sql.dialect import SQLITE
from harvest_engine.store.sql.reads import SQLITE_READS
from harvest_engine.store.sql.schedules import SQLITE_SCHEDULES
from harvest_engine.store.sqlite import (
    readonly,
    verified_reads,
    verify,
)
from harvest_engine.store.sqlite.connection import ClosedConnection
from harvest_engine.store.sqlite.faults import guard_public_methods

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from types import TracebackType

    from harvest_engine.events import HistoryEvent
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
    from harvest_engine.store.sqlite.readonly import ReadConnection


@guard_public_methods()
class SqliteReader:
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

    @classmethod
    def open(cls, path: str | Path) -> SqliteReader:
        """Open a harvest file read-only.

        Raises:
            NotAHarvestDatabase: no such file, not SQLite, or not a harvest file.
            SchemaTooNew: the file was written by a newer harvest.
        """
        conn, version = readonly.open_read_only(path)
        return cls(str(path), conn, version)

    def close(self) -> None:
        """Close the connection (safe to call twice)."""
        if not self.closed:
            self.closed = True
            self._conn.close()
            self._conn = cast("ReadConnection", ClosedConnection(self.path))

    def __enter__(self) -> SqliteReader:
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

    # -- change detection ---------------------------------------------------

    def data_version(self) -> int:
        """A number that changes whenever another connection commits to the file."""
        return readonly.data_version(self._conn)

    # -- runs -----------------------------------------------------------------

    def list_executions(self, flt: ExecutionFilter | None = None) -> ExecutionPage:
        """One page of runs, newest first, without payloads.

        Raises:
            InvalidFilter: `flt` is not an ExecutionFilter.
        """
        return listing.list_executions(self._conn, SQLITE, _filter(flt), self._columns)

    def visit_executions(
        self, flt: ExecutionFilter | None, fn: Callable[[ExecutionDetail], object]
    ) -> int | None:
        """Call `fn` on each run `list_executions(flt)` would return, with its payloads.

        Every row comes from one read snapshot held until the visit returns,
        so keep `fn` short. `fn`'s return value is ignored.

        Returns:
            The cursor of the next page, or None at the end.
        """
        chosen = _filter(flt)
        last: int | None = None
        count = 0
        with readonly.snapshot(self._conn):
            with closing(
                listing.visit_executions(self._conn, SQLITE, chosen, self._columns)
            ) as rows:
                for detail in rows:
                    fn(detail)
                    last = detail.cursor
                    count += 1
            more = (
                count == chosen.page_size
                and last is not None
                and bool(
                    listing.list_executions(
                        self._conn, SQLITE, chosen.before(last).limit(1), self._columns
                    ).executions
                )
            )
        return last if more else None

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

    def counts_by_state(self) -> dict[str, int]:
        """How many runs are in each state (every state present, maybe 0)."""
        return listing.counts_by_state(self._conn, SQLITE)

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

    def activity_attempts(
        self, exec_id: str | ExecutionId, name: str | None = None
    ) -> list[ActivityAttempt]:
        """Finished attempts of the run's activities (of one name, or all)."""
        return SQLITE_READS.activity_attempts(self._conn, self._require(exec_id), name)

    def pending_tasks(self, exec_id: str | ExecutionId) -> list[PendingTask]:
        """The run's unfinished activity tasks."""
        return SQLITE_READS.pending_tasks(self._conn, self._require(exec_id))

    def timers(self, exec_id: str | ExecutionId) -> list[TimerRow]:
        """The run's unfired timers, soonest first."""
        return SQLITE_READS.timers(self._conn, self._require(exec_id))

    def staged_signals(self, exec_id: str | ExecutionId) -> list[StagedSignal]:
        """Signals delivered to the run that its history has not yet taken in."""
        return SQLITE_READS.staged_signals(self._conn, self._require(exec_id))

    def mutexes(self, exec_id: str | ExecutionId) -> list[MutexRow]:
        """Mutex keys the run holds or waits for."""
        return SQLITE_READS.mutexes(self._conn, self._require(exec_id))

    # -- costs and logs ---------------------------------------------------------

    def llm_ledger(self, exec_id: str | ExecutionId) -> list[LedgerRow]:
        """The run's LLM calls, in recording order."""
        return SQLITE_READS.llm_ledger(self._conn, self._require(exec_id))

    def llm_totals(self, exec_id: str | ExecutionId) -> LedgerTotals:
        """The run's LLM calls summed: calls, tokens in and out, latency."""
        return SQLITE_READS.llm_totals(self._conn, self._require(exec_id))

    def workflow_logs(self, exec_id: str | ExecutionId) -> list[LogLine]:
        """The run's `ctx.log` lines in order; a truncation marker comes last."""
        return SQLITE_READS.workflow_logs(self._conn, self._require(exec_id))

    def count_workflow_logs(self, exec_id: str | ExecutionId) -> int:
        """How many log lines the run kept (the truncation marker not counted)."""
        return SQLITE_READS.count_workflow_logs(self._conn, self._require(exec_id))

    def workflow_log_truncated(self, exec_id: str | ExecutionId) -> bool:
        """Whether the run's log dropped lines past its `max_lines`."""
        return SQLITE_READS.workflow_log_truncated(self._conn, self._require(exec_id))

    # -- schedules --------------------------------------------------------------

    def list_schedules(self) -> list[ScheduleRow]:
        """Every stored schedule, by workflow name (a damaged one has `problem` set)."""
        return SQLITE_SCHEDULES.list_all(self._conn)

    def _require(self, exec_id: str | ExecutionId) -> str:
        text = str(exec_id).strip() if exec_id is not None else ""
        if not text or not verified_reads.exists(self._conn, text):
            raise ExecutionNotFound(exec_id=exec_id)
        return text


def _filter(flt: ExecutionFilter | None) -> ExecutionFilter:
    if flt is None:
        return ExecutionFilter()
    if not isinstance(flt, ExecutionFilter):
        raise InvalidFilter(
            reason=f"expected an ExecutionFilter, got {type(flt).__name__}"
        )
    return flt
