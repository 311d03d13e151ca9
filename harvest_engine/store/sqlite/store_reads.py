"""The reads of a SqliteStore outside a transaction: runs, tasks, wakeups, the inspector's views.

`SqliteStore` (store.py) inherits these; each is one query on the writer's
connection (queries.py, listing.py and friends hold the SQL), or a short
write where a read needs one first (released claims, a heartbeat).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.store.sqlite import commands as command_sql
from harvest_engine.store.sqlite import (
    listing,
    operator_reads,
    queries,
    readonly,
    run_reads,
    verify,
    wakeups,
)
from harvest_engine.store.sqlite import schedules as schedule_sql
from harvest_engine.store.sqlite.commit_watch import CommitWatch, open_commit_watch
from harvest_engine.store.sqlite.faults import guard_public_methods
from harvest_engine.store.sqlite.wakeups import PANIC_BACKOFF
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    import sqlite3
    import threading
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
        TimerRow,
    )
    from harvest_engine.store.rows import CommandRecord, ExecutionRecord, TaskRecord
    from harvest_engine.store.sqlite.lock import WriterLock
    from harvest_engine.store.sqlite.write_txn import SqliteWriteTxn


@guard_public_methods()
class StoreReads:
    """DurableStore methods that read outside a write transaction."""

    path: str
    _conn: sqlite3.Connection
    _lock: WriterLock | None
    _write_lock: threading.Lock
    _released_claims: set[int]

    if TYPE_CHECKING:

        def write(self) -> AbstractContextManager[SqliteWriteTxn]: ...  # store_txn's

    def pending_commands(self, limit: int) -> list[CommandRecord]:
        """Client commands not applied yet, in arrival order."""
        return command_sql.pending(self._conn, limit)

    # -- reads outside a transaction ----------------------------------------

    def execution(self, exec_id: str) -> ExecutionRecord | None:
        return queries.execution(self._conn, exec_id)

    def exists(self, exec_id: str) -> bool:
        """Whether a run has this id."""
        return queries.exists(self._conn, exec_id)

    def load_events(self, exec_id: str, after_seq: int = 0) -> list[HistoryEvent]:
        events = queries.load_events(self._conn, exec_id, after_seq)
        if after_seq == 0:  # a whole history: its end must match the row
            verify.check_run(self._conn, exec_id)
        return events

    def runs_needing_decision(self, now: datetime) -> list[str]:
        at = micros(now)
        rows = self._conn.execute(
            "SELECT exec_id FROM harvest_executions e WHERE state = 'RUNNING' AND ("
            " needs_decision = 1"
            " OR (deadline IS NOT NULL AND deadline <= ?)"
            " OR EXISTS (SELECT 1 FROM harvest_timers t WHERE t.exec_id = e.exec_id"
            "            AND t.fire_at <= ?)"
            ") AND NOT (" + PANIC_BACKOFF + " AND (deadline IS NULL OR deadline > ?))"
            " ORDER BY id",
            (at, at, at, at),
        ).fetchall()
        return [r[0] for r in rows]

    def running_exec_ids(self) -> list[str]:
        """Every RUNNING run, oldest first."""
        rows = self._conn.execute(
            "SELECT exec_id FROM harvest_executions WHERE state = 'RUNNING' ORDER BY id"
        ).fetchall()
        return [r[0] for r in rows]

    def ready_tasks(self, exec_id: str | None, now: datetime) -> list[TaskRecord]:
        if self._released_claims:
            with self.write():
                pass  # puts the released claims back to PENDING first
        sql = (
            f"SELECT {queries.TASK_COLUMNS} FROM harvest_tasks WHERE status = 'PENDING' "
            "AND ready_at <= ?"
        )
        args: tuple[Any, ...] = (micros(now),)
        if exec_id is not None:
            sql += " AND exec_id = ?"
            args += (exec_id,)
        rows = self._conn.execute(sql + " ORDER BY ready_at, id", args).fetchall()
        return [queries.task_from_row(row) for row in rows]

    def claim_task(self, task_id: int, now: datetime) -> TaskRecord | None:
        with self.write() as txn:
            return txn.claim_task(task_id, now)

    def claimed_task_ids(self, task_ids: Sequence[int]) -> set[int]:
        """Which of these tasks are still RUNNING (claimed and neither recorded nor dropped)."""
        return queries.claimed_task_ids(self._conn, task_ids)

    def save_heartbeat(self, task_id: int, details: str) -> None:
        with self.write():
            self._conn.execute(
                "UPDATE harvest_tasks SET heartbeat = ? WHERE id = ?",
                (details, task_id),
            )

    def next_wakeup(self, exec_id: str) -> datetime | None:
        row = self._conn.execute(
            "SELECT MIN(t) FROM ("
            " SELECT MIN(fire_at) AS t FROM harvest_timers WHERE exec_id = ?"
            " UNION ALL SELECT MIN(ready_at) FROM harvest_tasks WHERE exec_id = ?"
            "  AND status = 'PENDING')",
            (exec_id, exec_id),
        ).fetchone()
        return queries.opt_time(row[0])

    def earliest_due(
        self, now: datetime, *, skip_schedules: Sequence[str] = ()
    ) -> datetime | None:
        """The earliest time any waiting row comes due (`now` for ready work); None if none."""
        return wakeups.earliest_due(self._conn, now, skip_schedules=skip_schedules)

    def data_version(self) -> int:
        """A number that changes when another connection (another process) commits."""
        return readonly.data_version(self._conn)

    def open_commit_watch(self) -> CommitWatch | None:
        """An inotify watch on the file and its WAL (None in memory or off Linux)."""
        if self._lock is None:  # an in-memory database has no file to watch
            return None
        return open_commit_watch(self.path)

    def activity_attempts(
        self, exec_id: str, name: str | None
    ) -> list[ActivityAttempt]:
        return run_reads.activity_attempts(self._conn, exec_id, name)

    def describe(self, exec_id: str) -> ExecutionDetail | None:
        return queries.describe(self._conn, exec_id)

    def pending_tasks(self, exec_id: str) -> list[PendingTask]:
        return run_reads.pending_tasks(self._conn, exec_id)

    def timers(self, exec_id: str) -> list[TimerRow]:
        return run_reads.timers(self._conn, exec_id)

    def staged_signals(self, exec_id: str) -> list[StagedSignal]:
        return run_reads.staged_signals(self._conn, exec_id)

    def mutexes(self, exec_id: str) -> list[MutexRow]:
        return run_reads.mutexes(self._conn, exec_id)

    def llm_ledger(self, exec_id: str) -> list[LedgerRow]:
        return run_reads.llm_ledger(self._conn, exec_id)

    def workflow_logs(self, exec_id: str) -> list[LogLine]:
        return run_reads.workflow_logs(self._conn, exec_id)

    # -- operating (issue 5) ----------------------------------------------------

    def list_executions(self, filter_: ExecutionFilter) -> ExecutionPage:
        return listing.list_executions(self._conn, filter_)

    def visit_executions(self, filter_: ExecutionFilter) -> Iterator[ExecutionDetail]:
        # The visitor may write through the runtime, so no transaction or lock
        # of the writer's connection stays open while it runs.
        if self._lock is not None:
            # A file: a read-only connection of its own holds the one snapshot.
            conn, _ = readonly.open_read_only(self.path)
            try:
                with readonly.snapshot(conn):
                    yield from listing.visit_executions(conn, filter_)
            finally:
                conn.close()
            return
        # In memory there is one connection: read the page (at most 1000 rows)
        # in one snapshot, then hand the rows out.
        with self._write_lock, readonly.snapshot(self._conn):
            rows = list(listing.visit_executions(self._conn, filter_))
        yield from rows

    def counts_by_state(self) -> dict[str, int]:
        return listing.counts_by_state(self._conn)

    def list_schedules(self) -> list[ScheduleRow]:
        return schedule_sql.list_all(self._conn)

    def due_schedules(self, now: datetime) -> list[ScheduleRow]:
        return schedule_sql.due(self._conn, now)

    def llm_totals(self, exec_id: str) -> LedgerTotals:
        return operator_reads.llm_totals(self._conn, exec_id)
