"""The per-run reads both stores run alike: runs, events, side tables, staged signals, totals.

Written once with SQLite's marks; a `Reads` renders every statement for its
dialect when built (at import: `SQLITE_READS`, `POSTGRES_READS`), so a
call costs a raw ``execute``. Payload columns read as `Stored` values. The
SQLite store checks what it reads against the run's history on top of these
(sqlite/verified_reads.py): a file any process can write may hold anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine import payloads
from harvest_engine.events import HistoryEvent
from harvest_engine.states import ExecutionId
from harvest_engine.store.operations import LedgerTotals
from harvest_engine.store.records import (
    ActivityAttempt,
    LedgerRow,
    LogLine,
    MutexRow,
    PendingTask,
    StagedSignal,
    TimerRow,
)
from harvest_engine.store.rows import UnreadableRow
from harvest_engine.store.sql.columns import (
    EXECUTION_COLUMNS,
    LABEL_COLUMNS,
    TASK_COLUMNS,
    detail_from_row,
    error_info,
    execution_from_row,
    opt_number,
    opt_time,
    opt_whole,
    stored_json,
    task_from_row,
    time_at,
    whole,
)
from harvest_engine.store.sql.dialect import POSTGRES, SQLITE, Dialect
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from harvest_engine.store.records import ExecutionDetail
    from harvest_engine.store.rows import ExecutionRecord, TaskRecord
    from harvest_engine.store.sql.executes import Executes


class Reads:
    """The shared reads in one dialect, every statement rendered once when built."""

    def __init__(self, dialect: Dialect) -> None:
        r = dialect.render
        self.dialect = dialect
        self.execution_sql = r(
            f"SELECT {EXECUTION_COLUMNS} FROM harvest_executions WHERE exec_id = ?"
        )
        """One run's row by exec_id, selected with EXECUTION_COLUMNS."""
        self.describe_sql = r(
            f"SELECT {EXECUTION_COLUMNS}, {LABEL_COLUMNS} FROM harvest_executions "
            "WHERE exec_id = ?"
        )
        """One run's row with its labels, as `detail_from_row` reads it."""
        self.execution_locked_sql = self.execution_sql + dialect.for_update
        self.task_sql = r(f"SELECT {TASK_COLUMNS} FROM harvest_tasks WHERE id = ?")
        self.exists_sql = r("SELECT 1 FROM harvest_executions WHERE exec_id = ?")
        self.events_sql = r(
            "SELECT seq, type, at, attrs FROM harvest_events WHERE exec_id = ? "
            "AND seq > ? ORDER BY seq"
        )
        """A run's (seq, type, at, attrs) rows after a seq, in order."""
        self._attempts = r(
            "SELECT activity_id, activity_name, attempt, started_at, ended_at, outcome, "
            "error FROM harvest_activity_attempts WHERE exec_id = ?"
        )
        self._attempts_named = self._attempts + r(" AND activity_name = ?")
        self._pending_tasks = r(
            f"SELECT {TASK_COLUMNS} FROM harvest_tasks WHERE exec_id = ? ORDER BY id"
        )
        self._timers = r(
            "SELECT timer_id, fire_at FROM harvest_timers WHERE exec_id = ? "
            "ORDER BY fire_at, timer_id"
        )
        # A waiter's place: the holder plus the waiters queued before it, in
        # the order grant_mutex serves them (queued_at, then exec_id).
        self._mutexes = r(
            "SELECT m.key, m.exec_id, m.granted, m.lock_seq, m.queued_at, "
            "CASE WHEN m.granted = 1 THEN 0 ELSE ("
            " SELECT COUNT(*) FROM harvest_mutexes o WHERE o.key = m.key AND ("
            "  o.granted = 1 OR (o.granted = 0 AND (o.queued_at < m.queued_at OR"
            "   (o.queued_at = m.queued_at AND o.exec_id < m.exec_id))))) END "
            "FROM harvest_mutexes m WHERE m.exec_id = ? ORDER BY m.key"
        )
        self._ledger = r(
            "SELECT activity, attempt, model, input_tokens, output_tokens, latency, "
            "recorded_at FROM harvest_llm_ledger WHERE exec_id = ? ORDER BY id"
        )
        self._logs = r(
            "SELECT seq, at, message, marker FROM harvest_workflow_logs "
            "WHERE exec_id = ? ORDER BY seq"
        )
        self._staged = r(
            "SELECT id, name, payload, idempotency_key, received_at FROM harvest_signals "
            "WHERE exec_id = ? AND delivered = 0 ORDER BY received_at, id LIMIT ?"
        )
        self._due_timers = r(
            "SELECT timer_id, fire_at FROM harvest_timers WHERE exec_id = ? "
            "AND fire_at <= ? ORDER BY fire_at, timer_id"
        )
        self._runs_of_key = r(
            f"SELECT {EXECUTION_COLUMNS} FROM harvest_executions "
            "WHERE workflow_name = ? AND workflow_id = ? ORDER BY id DESC"
        )
        self._running_children = r(
            f"SELECT {EXECUTION_COLUMNS} FROM harvest_executions "
            "WHERE parent_exec_id = ? AND state IN ('RUNNING', 'ENQUEUED') ORDER BY id"
        )
        self._signal_key = r(
            "SELECT 1 FROM harvest_signals WHERE exec_id = ? AND idempotency_key = ?"
        )
        # The last column counts rows whose numbers are text, which SUM would read as 0.
        not_whole, not_a_number = dialect.not_whole, dialect.not_a_number
        self._ledger_totals = r(
            "SELECT COUNT(*), COALESCE(SUM(input_tokens), 0), "
            "COALESCE(SUM(output_tokens), 0), COALESCE(SUM(latency), 0.0), "
            f"COUNT(CASE WHEN {not_whole.format(column='input_tokens')} OR "
            f"{not_whole.format(column='output_tokens')} OR "
            f"{not_a_number.format(column='latency')} THEN 1 END) "
            "FROM harvest_llm_ledger WHERE exec_id = ?"
        )
        self._log_count = r(
            "SELECT COUNT(*) FROM harvest_workflow_logs WHERE exec_id = ? AND marker = 0"
        )
        self._log_marker = r(
            "SELECT 1 FROM harvest_workflow_logs WHERE exec_id = ? AND marker = 1 LIMIT 1"
        )

    # -- runs and events ----------------------------------------------------

    def execution(
        self, conn: Executes, exec_id: str, *, lock: bool = False
    ) -> ExecutionRecord | None:
        """One run's row; with `lock`, locked until the transaction ends where rows lock."""
        sql = self.execution_locked_sql if lock else self.execution_sql
        row = conn.execute(sql, (exec_id,)).fetchone()
        return None if row is None else execution_from_row(row)

    def runs_of_key(
        self, conn: Executes, workflow_name: str, workflow_id: str
    ) -> list[ExecutionRecord]:
        """Every run of a workflow id, newest first."""
        rows = conn.execute(self._runs_of_key, (workflow_name, workflow_id)).fetchall()
        return [execution_from_row(row) for row in rows]

    def running_children(self, conn: Executes, exec_id: str) -> list[ExecutionRecord]:
        """A run's live (RUNNING or ENQUEUED) children, oldest first."""
        rows = conn.execute(self._running_children, (exec_id,)).fetchall()
        return [execution_from_row(row) for row in rows]

    def task(self, conn: Executes, task_id: int) -> TaskRecord | None:
        """A task row by id."""
        row = conn.execute(self.task_sql, (task_id,)).fetchone()
        return None if row is None else task_from_row(row)

    def exists(self, conn: Executes, exec_id: str) -> bool:
        """Whether a run with this id exists."""
        return conn.execute(self.exists_sql, (exec_id,)).fetchone() is not None

    def load_events(
        self, conn: Executes, exec_id: str, after_seq: int = 0
    ) -> list[HistoryEvent]:
        """A run's events after `after_seq`, in order (unchecked: see verified_reads)."""
        rows = conn.execute(self.events_sql, (exec_id, after_seq)).fetchall()
        return [
            HistoryEvent(
                seq=seq, type=type_, at=from_micros(at), attrs=payloads.loads(attrs)
            )
            for seq, type_, at, attrs in rows
        ]

    def describe(self, conn: Executes, exec_id: str) -> ExecutionDetail | None:
        """One run with payloads as Stored values (unchecked: see verified_reads)."""
        row = conn.execute(self.describe_sql, (exec_id,)).fetchone()
        return None if row is None else detail_from_row(row)

    # -- side tables --------------------------------------------------------

    def activity_attempts(
        self, conn: Executes, exec_id: str, name: str | None
    ) -> list[ActivityAttempt]:
        """Finished attempts of a run (one activity name, or all), in order."""
        if name is None:
            rows = conn.execute(self._attempts + " ORDER BY id", (exec_id,)).fetchall()
        else:
            sql = self._attempts_named + " ORDER BY id"
            rows = conn.execute(sql, (exec_id, name)).fetchall()
        return [
            ActivityAttempt(
                activity_id=r[0],
                name=r[1],
                attempt=r[2],
                started_at=from_micros(r[3]),
                ended_at=opt_time(r[4]),
                # Files written before the outcomes were upper case read the same.
                outcome=str(r[5]).upper(),
                error=error_info(r[6]),
            )
            for r in rows
        ]

    def pending_tasks(self, conn: Executes, exec_id: str) -> list[PendingTask]:
        """A run's unfinished activity tasks."""
        rows = conn.execute(self._pending_tasks, (exec_id,)).fetchall()
        result = []
        for row in rows:
            task = task_from_row(row)
            result.append(
                PendingTask(
                    task_id=task.id,
                    activity_id=task.activity_id,
                    name=task.activity_name,
                    status=task.status,
                    attempt=task.attempt,
                    max_attempts=task.max_attempts,
                    ready_at=task.ready_at,
                    scheduled_at=task.scheduled_at,
                    last_error=error_info(task.last_error),
                    input=stored_json(task.input),
                )
            )
        return result

    def timers(self, conn: Executes, exec_id: str) -> list[TimerRow]:
        """A run's unfired timers, soonest first."""
        rows = conn.execute(self._timers, (exec_id,)).fetchall()
        return [
            TimerRow(timer_id=r[0], fire_at=time_at(r[1], "a timer's fire_at"))
            for r in rows
        ]

    def tasks_of(self, conn: Executes, exec_id: str) -> list[TaskRecord]:
        """A run's task rows, in order."""
        rows = conn.execute(self._pending_tasks, (exec_id,)).fetchall()
        return [task_from_row(row) for row in rows]

    def due_timers(self, conn: Executes, exec_id: str, now: datetime) -> list[TimerRow]:
        """A run's timers due at `now`, soonest first."""
        rows = conn.execute(self._due_timers, (exec_id, micros(now))).fetchall()
        return [TimerRow(timer_id=r[0], fire_at=from_micros(r[1])) for r in rows]

    def mutexes(self, conn: Executes, exec_id: str) -> list[MutexRow]:
        """Mutex places a run holds or waits for."""
        rows = conn.execute(self._mutexes, (exec_id,)).fetchall()
        return [
            MutexRow(
                key=r[0],
                exec_id=ExecutionId(r[1]),
                granted=bool(r[2]),
                lock_seq=opt_whole(r[3], "a mutex row's lock_seq"),
                queued_at=time_at(r[4], "a mutex row's queued_at"),
                ahead=whole(r[5], "a mutex row's place"),
            )
            for r in rows
        ]

    def llm_ledger(self, conn: Executes, exec_id: str) -> list[LedgerRow]:
        """A run's LLM calls in recording order."""
        rows = conn.execute(self._ledger, (exec_id,)).fetchall()
        return [
            LedgerRow(
                activity=r[0],
                attempt=whole(r[1], "a ledger row's attempt"),
                model=r[2],
                input_tokens=whole(r[3], "a ledger row's input_tokens"),
                output_tokens=whole(r[4], "a ledger row's output_tokens"),
                latency=opt_number(r[5], "a ledger row's latency"),
                recorded_at=time_at(r[6], "a ledger row's recorded_at"),
            )
            for r in rows
        ]

    def workflow_logs(self, conn: Executes, exec_id: str) -> list[LogLine]:
        """A run's workflow log lines, marker included."""
        rows = conn.execute(self._logs, (exec_id,)).fetchall()
        return [
            LogLine(
                seq=r[0],
                at=time_at(r[1], "a log line's at"),
                message=r[2],
                marker=bool(r[3]),
            )
            for r in rows
        ]

    def staged_signals(
        self,
        conn: Executes,
        exec_id: str,
        limit: int = -1,
        max_bytes: int | None = None,
    ) -> list[StagedSignal]:
        """A run's undelivered signals in arrival order.

        At most `limit` of them (-1: no limit). With `max_bytes`, the read
        stops after the signal whose stored payloads bring the total to
        `max_bytes` (at least one signal is read), so a flood of large
        signals is never loaded past a byte budget.
        """
        return self.staged_signals_read(conn, exec_id, limit, max_bytes)[0]

    def staged_signals_read(
        self, conn: Executes, exec_id: str, limit: int, max_bytes: int | None
    ) -> tuple[list[StagedSignal], bool]:
        """`staged_signals`, and whether they are all the run's undelivered signals."""
        bound = self.dialect.no_limit if limit < 0 else limit
        cursor = conn.execute(self._staged, (exec_id, bound))
        cut = False
        if max_bytes is None:
            rows = cursor.fetchall()
        else:
            rows = []
            loaded = 0
            for r in cursor:
                rows.append(r)
                loaded += len(r[2]) if isinstance(r[2], (str, bytes)) else 0
                if loaded >= max_bytes:
                    cut = True  # maybe more are staged: not known
                    break
            cursor.close()
        seen_all = not cut and (limit < 0 or len(rows) < limit)
        return [
            StagedSignal(
                signal_id=r[0],
                name=r[1],
                payload=stored_json(r[2]),
                idempotency_key=r[3],
                received_at=from_micros(r[4]),
            )
            for r in rows
        ], seen_all

    def signal_key_holder(
        self, conn: Executes, exec_ids: Sequence[str], key: str
    ) -> str | None:
        """The first of `exec_ids` that holds a signal with idempotency key `key`, or None."""
        for exec_id in exec_ids:
            if conn.execute(self._signal_key, (exec_id, key)).fetchone() is not None:
                return exec_id
        return None

    # -- totals ----------------------------------------------------------------

    def llm_totals(self, conn: Executes, exec_id: str) -> LedgerTotals:
        """A run's ledger rows summed."""
        row = conn.execute(self._ledger_totals, (exec_id,)).fetchone()
        if row[4]:
            raise UnreadableRow(
                f"{row[4]} ledger row(s) of run {exec_id} hold text where numbers belong"
            )
        return LedgerTotals(
            calls=int(row[0]),
            input_tokens=int(row[1]),
            output_tokens=int(row[2]),
            latency=float(row[3]),
        )

    def count_workflow_logs(self, conn: Executes, exec_id: str) -> int:
        """A run's stored log lines, the truncation marker not counted."""
        return int(conn.execute(self._log_count, (exec_id,)).fetchone()[0])

    def workflow_log_truncated(self, conn: Executes, exec_id: str) -> bool:
        """Whether the run's log lost lines past its `max_lines` (a marker row exists)."""
        return conn.execute(self._log_marker, (exec_id,)).fetchone() is not None


SQLITE_READS = Reads(SQLITE)
POSTGRES_READS = Reads(POSTGRES)
