"""StoreReads: the DurableStore reads outside a write transaction, written once for both stores.

A store subclasses it and says what is its own: the connection a read runs
on (and the lock held meanwhile, `_reading`), the ready tasks (Postgres also
retakes expired leases), and a visit's snapshot. SQLite overrides the
single-run reads with checked ones (sqlite/verified_reads.py).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from harvest_engine.store.sql import listing, shaping
from harvest_engine.store.sql.columns import opt_time
from harvest_engine.store.sql.flow_reads import FlowReads
from harvest_engine.store.sql.flow_sql import flow_sql
from harvest_engine.store.sql.headers import HeaderSql
from harvest_engine.store.sql.progress import ProgressSql
from harvest_engine.store.sql.wakeups import (
    RUNS_NEEDING_DECISION,
    due_statement,
    earliest_due,
)
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from contextlib import AbstractContextManager
    from datetime import datetime

    from harvest_engine.events import HistoryEvent
    from harvest_engine.filters import ExecutionFilter
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
        StreamItem,
        TimerRow,
    )
    from harvest_engine.store.rows import CommandRecord, ExecutionRecord
    from harvest_engine.store.sql.commands import Commands
    from harvest_engine.store.sql.dialect import Dialect
    from harvest_engine.store.sql.executes import Executes
    from harvest_engine.store.sql.reads import Reads
    from harvest_engine.store.sql.schedules import Schedules


class StoreSql:
    """One dialect's statements a store reads with, rendered once (build at import)."""

    def __init__(
        self,
        dialect: Dialect,
        reads: Reads,
        schedules: Schedules,
        commands: Commands,
        due_sources: tuple[str, ...] = (),
    ) -> None:
        r = dialect.render
        self.dialect = dialect
        self.progress = ProgressSql(dialect)
        self.shaping = shaping.ShapingSql(dialect)
        self.reads = reads
        self.schedules = schedules
        self.commands = commands
        self.due_sources = due_sources
        self.flow = flow_sql(dialect)
        self.headers = HeaderSql(dialect)
        self.due = due_statement(dialect, due_sources)
        self.runs_needing_decision = r(RUNS_NEEDING_DECISION)
        self.running = (
            "SELECT exec_id FROM harvest_executions WHERE state = 'RUNNING' ORDER BY id"
        )
        self.next_wakeup = r(
            "SELECT MIN(t) FROM ("
            " SELECT MIN(fire_at) AS t FROM harvest_timers WHERE exec_id = ?"
            " UNION ALL SELECT MIN(ready_at) FROM harvest_tasks WHERE exec_id = ?"
            "  AND status = 'PENDING') AS wake"
        )


class StoreReads(ABC):
    """The reads both stores serve alike, each on the connection `_reading` lends."""

    def __init__(self, sql: StoreSql) -> None:
        self._sql = sql

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Executes]:
        """The connection a read runs on, held (locked where threads share it) for the block."""

    # -- runs -----------------------------------------------------------------

    def execution(self, exec_id: str) -> ExecutionRecord | None:
        with self._reading() as conn:
            return self._sql.reads.execution(conn, exec_id)

    def exists(self, exec_id: str) -> bool:
        """Whether a run has this id."""
        with self._reading() as conn:
            return self._sql.reads.exists(conn, exec_id)

    def load_events(self, exec_id: str, after_seq: int = 0) -> list[HistoryEvent]:
        with self._reading() as conn:
            return self._sql.reads.load_events(conn, exec_id, after_seq)

    def describe(self, exec_id: str) -> ExecutionDetail | None:
        with self._reading() as conn:
            return self._sql.reads.describe(conn, exec_id)

    def runs_needing_decision(self, now: datetime) -> list[str]:
        with self._reading() as conn:
            return needing_decision(conn, self._sql, now)

    def running_exec_ids(self) -> list[str]:
        """Every RUNNING run, oldest first."""
        with self._reading() as conn:
            rows = conn.execute(self._sql.running).fetchall()
        return [r[0] for r in rows]

    def next_wakeup(self, exec_id: str) -> datetime | None:
        with self._reading() as conn:
            row = conn.execute(self._sql.next_wakeup, (exec_id, exec_id)).fetchone()
        return opt_time(row[0] if row is not None else None)

    def earliest_due(
        self, now: datetime, *, skip_schedules: Sequence[str] = ()
    ) -> datetime | None:
        """The earliest time any waiting row comes due (`now` for ready work); None if none.

        The schedules and held starts of `skip_schedules` (their code is
        missing) do not count.
        """
        with self._reading() as conn:
            return due_at(conn, self._sql, now, skip_schedules)

    def pending_commands(self, limit: int) -> list[CommandRecord]:
        """Client commands not applied yet, in arrival order."""
        with self._reading() as conn:
            return self._sql.commands.pending(conn, limit)

    @contextmanager
    def flow_reads(self) -> Iterator[FlowReads]:
        """Flow-control reads (queues, waits) on the read connection, for the block."""
        with self._reading() as conn:
            yield FlowReads(self._sql.flow, conn)

    # -- one run's side tables ------------------------------------------------

    def activity_attempts(
        self, exec_id: str, name: str | None
    ) -> list[ActivityAttempt]:
        with self._reading() as conn:
            return self._sql.reads.activity_attempts(conn, exec_id, name)

    def pending_tasks(self, exec_id: str) -> list[PendingTask]:
        with self._reading() as conn:
            return self._sql.reads.pending_tasks(conn, exec_id)

    def timers(self, exec_id: str) -> list[TimerRow]:
        with self._reading() as conn:
            return self._sql.reads.timers(conn, exec_id)

    def staged_signals(self, exec_id: str) -> list[StagedSignal]:
        with self._reading() as conn:
            return self._sql.reads.staged_signals(conn, exec_id)

    def mutexes(self, exec_id: str) -> list[MutexRow]:
        with self._reading() as conn:
            return self._sql.reads.mutexes(conn, exec_id)

    def llm_ledger(self, exec_id: str) -> list[LedgerRow]:
        with self._reading() as conn:
            return self._sql.reads.llm_ledger(conn, exec_id)

    def workflow_logs(self, exec_id: str) -> list[LogLine]:
        with self._reading() as conn:
            return self._sql.reads.workflow_logs(conn, exec_id)

    def llm_totals(self, exec_id: str) -> LedgerTotals:
        with self._reading() as conn:
            return self._sql.reads.llm_totals(conn, exec_id)

    def headers_of(self, exec_id: str, kind: str, ref: str) -> str | None:
        """The headers (JSON text) stored with a run's start or activity, or None."""
        with self._reading() as conn:
            return self._sql.headers.get(conn, exec_id, kind, ref)

    # -- operating ----------------------------------------------------------------

    def list_executions(self, filter_: ExecutionFilter) -> ExecutionPage:
        with self._reading() as conn:
            return listing.list_executions(conn, self._sql.dialect, filter_)

    def counts_by_state(self) -> dict[str, int]:
        with self._reading() as conn:
            return listing.counts_by_state(conn, self._sql.dialect)

    def list_schedules(self) -> list[ScheduleRow]:
        with self._reading() as conn:
            return self._sql.schedules.list_all(conn)

    def due_schedules(self, now: datetime) -> list[ScheduleRow]:
        with self._reading() as conn:
            return self._sql.schedules.due(conn, now)

    # -- progress (events and streams) -----------------------------------------

    def run_events(self, exec_id: str) -> dict[str, Any]:
        with self._reading() as conn:
            return self._sql.progress.events(conn, exec_id)

    def run_event(self, exec_id: str, key: str) -> tuple[bool, Any]:
        with self._reading() as conn:
            return self._sql.progress.event(conn, exec_id, key)

    def stream_items(self, exec_id: str, key: str, offset: int) -> list[StreamItem]:
        with self._reading() as conn:
            return self._sql.progress.stream(conn, exec_id, key, offset)

    # -- held starts and circuit breakers (sql/shaping.py) ------------------------

    def due_held_starts(self, now: datetime) -> list[tuple[str, str]]:
        """The (workflow name, key) of every held start due at `now`, earliest first."""
        with self._reading() as conn:
            return shaping.due_held(conn, self._sql.shaping, now)

    def held_starts(self) -> list[shaping.HeldRow]:
        """Every held start (debounce or batch window still open), earliest due first."""
        with self._reading() as conn:
            return shaping.list_held(conn, self._sql.shaping)

    def breaker(self, activity: str) -> shaping.BreakerRow | None:
        """One activity's circuit breaker as stored; None when it never failed."""
        with self._reading() as conn:
            return shaping.read_breaker(conn, self._sql.shaping, activity)

    def breakers(self) -> list[shaping.BreakerRow]:
        """Every stored circuit breaker, by activity name."""
        with self._reading() as conn:
            return shaping.list_breakers(conn, self._sql.shaping)


def needing_decision(conn: Executes, sql: StoreSql, now: datetime) -> list[str]:
    """The RUNNING runs with work due at `now`, oldest first (`runs_needing_decision`)."""
    at = micros(now)
    rows = conn.execute(sql.runs_needing_decision, (at, at, at, at)).fetchall()
    return [r[0] for r in rows]


def due_at(
    conn: Executes, sql: StoreSql, now: datetime, skip: Sequence[str] = ()
) -> datetime | None:
    """The earliest due time over every source (`earliest_due`), but `skip`'s schedules."""
    statement = sql.due
    if skip:
        statement = due_statement(sql.dialect, sql.due_sources, len(skip))
    return earliest_due(conn, statement, now, skip)
