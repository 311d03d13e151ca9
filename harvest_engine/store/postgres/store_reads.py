"""The reads of a PostgresStore outside a transaction: runs, tasks, wakeups, the inspector's views.

`PostgresStore` (store.py) inherits these; each takes the store's lock and
runs one query on its live connection (reads.py, listing.py and friends
hold the SQL).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.store.postgres.faults import guard_public_methods
from harvest_engine.store.sql import columns, listing
from harvest_engine.store.sql.dialect import POSTGRES
from harvest_engine.store.sql.reads import POSTGRES_READS
from harvest_engine.store.sql.schedules import POSTGRES_SCHEDULES
from harvest_engine.store.sql.wakeups import RUNS_NEEDING_DECISION
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    import threading
    from collections.abc import Iterator
    from contextlib import AbstractContextManager
    from datetime import datetime

    import psycopg

    from harvest_engine.events import HistoryEvent
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.store.operations import LedgerTotals, ScheduleRow
    from harvest_engine.store.postgres.write_txn import PostgresWriteTxn
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
    from harvest_engine.store.rows import ExecutionRecord, TaskRecord

_RUNS_NEEDING_DECISION = POSTGRES.render(RUNS_NEEDING_DECISION)


@guard_public_methods()
class StoreReads:
    """DurableStore methods that read outside a write transaction."""

    _lock: threading.RLock
    _released_claims: set[int]

    if TYPE_CHECKING:

        def _live(self) -> psycopg.Connection[tuple[Any, ...]]: ...  # store.py's

        def write(self) -> AbstractContextManager[PostgresWriteTxn]: ...  # store.py's

    def execution(self, exec_id: str) -> ExecutionRecord | None:
        with self._lock:
            return POSTGRES_READS.execution(self._live(), exec_id)

    def exists(self, exec_id: str) -> bool:
        """Whether a run has this id."""
        return self.execution(exec_id) is not None

    def load_events(self, exec_id: str, after_seq: int = 0) -> list[HistoryEvent]:
        with self._lock:
            return POSTGRES_READS.load_events(self._live(), exec_id, after_seq)

    def runs_needing_decision(self, now: datetime) -> list[str]:
        at = micros(now)
        with self._lock:
            rows = (
                self._live()
                .execute(_RUNS_NEEDING_DECISION, (at, at, at, at))
                .fetchall()
            )
        return [r[0] for r in rows]

    def running_exec_ids(self) -> list[str]:
        """Every RUNNING run, oldest first."""
        with self._lock:
            rows = (
                self._live()
                .execute(
                    "SELECT exec_id FROM harvest_executions WHERE state = 'RUNNING' ORDER BY id"
                )
                .fetchall()
            )
        return [r[0] for r in rows]

    def ready_tasks(self, exec_id: str | None, now: datetime) -> list[TaskRecord]:
        if self._released_claims:
            with self.write():
                pass  # puts the released claims back to PENDING first
        # Ready: PENDING and due, or RUNNING under a lease that expired (a dead worker's).
        sql = (
            f"SELECT {columns.TASK_COLUMNS} FROM harvest_tasks WHERE "
            "((status = 'PENDING' AND ready_at <= %s) OR "
            "(status = 'RUNNING' AND lease_expires_at < clock_timestamp()))"
        )
        args: tuple[Any, ...] = (micros(now),)
        if exec_id is not None:
            sql += " AND exec_id = %s"
            args += (exec_id,)
        with self._lock:
            rows = self._live().execute(sql + " ORDER BY ready_at, id", args).fetchall()
        return [columns.task_from_row(row) for row in rows]

    def next_wakeup(self, exec_id: str) -> datetime | None:
        with self._lock:
            row = (
                self._live()
                .execute(
                    "SELECT LEAST("
                    " (SELECT MIN(fire_at) FROM harvest_timers WHERE exec_id = %s),"
                    " (SELECT MIN(ready_at) FROM harvest_tasks WHERE exec_id = %s"
                    "  AND status = 'PENDING'))",
                    (exec_id, exec_id),
                )
                .fetchone()
            )
        return columns.opt_time(row[0] if row is not None else None)

    def activity_attempts(
        self, exec_id: str, name: str | None
    ) -> list[ActivityAttempt]:
        with self._lock:
            return POSTGRES_READS.activity_attempts(self._live(), exec_id, name)

    def describe(self, exec_id: str) -> ExecutionDetail | None:
        with self._lock:
            return POSTGRES_READS.describe(self._live(), exec_id)

    def pending_tasks(self, exec_id: str) -> list[PendingTask]:
        with self._lock:
            return POSTGRES_READS.pending_tasks(self._live(), exec_id)

    def timers(self, exec_id: str) -> list[TimerRow]:
        with self._lock:
            return POSTGRES_READS.timers(self._live(), exec_id)

    def staged_signals(self, exec_id: str) -> list[StagedSignal]:
        with self._lock:
            return POSTGRES_READS.staged_signals(self._live(), exec_id)

    def mutexes(self, exec_id: str) -> list[MutexRow]:
        with self._lock:
            return POSTGRES_READS.mutexes(self._live(), exec_id)

    def llm_ledger(self, exec_id: str) -> list[LedgerRow]:
        with self._lock:
            return POSTGRES_READS.llm_ledger(self._live(), exec_id)

    def workflow_logs(self, exec_id: str) -> list[LogLine]:
        with self._lock:
            return POSTGRES_READS.workflow_logs(self._live(), exec_id)

    # -- operating (issue 5) ----------------------------------------------------

    def list_executions(self, filter_: ExecutionFilter) -> ExecutionPage:
        with self._lock:
            return listing.list_executions(self._live(), POSTGRES, filter_)

    def visit_executions(self, filter_: ExecutionFilter) -> Iterator[ExecutionDetail]:
        # One statement is one snapshot; the page (at most 1000 rows) is read
        # whole before the visitor runs, so it may write through the runtime.
        with self._lock:
            rows = list(listing.visit_executions(self._live(), POSTGRES, filter_))
        yield from rows

    def counts_by_state(self) -> dict[str, int]:
        with self._lock:
            return listing.counts_by_state(self._live(), POSTGRES)

    def list_schedules(self) -> list[ScheduleRow]:
        with self._lock:
            return POSTGRES_SCHEDULES.list_all(self._live())

    def due_schedules(self, now: datetime) -> list[ScheduleRow]:
        with self._lock:
            return POSTGRES_SCHEDULES.due(self._live(), now)

    def llm_totals(self, exec_id: str) -> LedgerTotals:
        with self._lock:
            return POSTGRES_READS.llm_totals(self._live(), exec_id)
