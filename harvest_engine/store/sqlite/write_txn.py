"""SqliteWriteTxn: one write transaction's statements, the WriteTxn half of the store boundary."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import HarvestInternalError
from harvest_engine.store.records import (
    StagedSignal,
    TimerRow,
)
from harvest_engine.store.sqlite import commands as command_sql
from harvest_engine.store.sqlite import queries, task_rows, verify, workflow_logs
from harvest_engine.store.sqlite import retention as retention_sql
from harvest_engine.store.sqlite import schedules as schedule_sql
from harvest_engine.store.sqlite.run_cache import (
    KEPT_EVENTS,
    CachedRun,
    RunCache,
    read_run,
    started_run,
    with_fields,
)
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    from harvest_engine.events import HistoryEvent
    from harvest_engine.store.operations import ScheduleRow
    from harvest_engine.store.rows import (
        AttemptRecord,
        ExecutionRecord,
        LedgerEntry,
        NewExecution,
        NewTask,
        TaskRecord,
    )

_TIME_COLUMNS = frozenset({"started_at", "closed_at", "deadline", "not_before"})
_EXECUTION_FIELDS = frozenset(
    {
        "state",
        "attempt",
        "output",
        "error",
        "memo",
        "search_attributes",
        "successor",
        "closed_at",
        "deadline",
        "cancel_reason",
        "cancel_seq",
        "not_before",
        "needs_decision",
        "panic_count",
        "workflow_id",
    }
)


def _opt_micros(value: datetime | None) -> int | None:
    return None if value is None else micros(value)


# `col = ?, ...` by the tuple of column names (a handful of sets recur).
_ASSIGNMENTS: dict[tuple[str, ...], str] = {}
# append_events' row UPDATE by the assignments of the caller's other columns.
_APPEND_UPDATES: dict[str, str] = {}


def _assignments(fields: dict[str, Any]) -> tuple[str, list[Any]]:
    """`col = ?, ...` and the stored values for columns of the run's row."""
    names = tuple(fields)
    sql = _ASSIGNMENTS.get(names)
    if sql is None:
        unknown = set(fields) - _EXECUTION_FIELDS
        if unknown:
            raise HarvestInternalError(
                f"update_execution got unknown columns {sorted(unknown)}"
            )
        sql = _ASSIGNMENTS[names] = ", ".join(f"{k} = ?" for k in names)
    values = [_opt_micros(v) if k in _TIME_COLUMNS else v for k, v in fields.items()]
    return sql, values


class SqliteWriteTxn:
    """The WriteTxn of one `BEGIN IMMEDIATE` transaction."""

    def __init__(self, conn: sqlite3.Connection, runs: RunCache | None = None) -> None:
        self._conn = conn
        self.undo: list[Callable[[], None]] = []
        # Shared by the transaction and its savepoints; kept by the store (run_cache).
        self._runs = RunCache() if runs is None else runs

    def on_rollback(self, fn: Callable[[], None]) -> None:
        """Call `fn` if this transaction rolls back, so in-memory state follows the file."""
        self.undo.append(fn)

    # -- runs ---------------------------------------------------------------

    def lock_runs(
        self,
        exec_ids: Sequence[str],
        *,
        deciding_at: datetime | None = None,
        task_ids: Sequence[int] = (),
    ) -> set[str]:
        del exec_ids, deciding_at, task_ids  # the only writer: nothing to take
        return set()

    def lock_for_decision(self, exec_id: str) -> bool:
        del exec_id  # BEGIN IMMEDIATE already made this the only writer
        return True

    def execution(self, exec_id: str) -> ExecutionRecord | None:
        run = self._run(exec_id)
        return None if run is None else run.record

    def peek_execution(self, exec_id: str) -> ExecutionRecord | None:
        # The row alone: a signal's check needs none of the run's holdings.
        run = self._runs.get(exec_id)
        return queries.execution(self._conn, exec_id) if run is None else run.record

    def _run(self, exec_id: str) -> CachedRun | None:
        """The run as this transaction knows it; read (with its holdings) the first time."""
        run = self._runs.get(exec_id)
        if run is None:
            run = read_run(self._conn, exec_id)
            if run is not None:
                self._runs.put(run)
        return run

    def runs_of_key(
        self, workflow_name: str, workflow_id: str
    ) -> list[ExecutionRecord]:
        rows = self._conn.execute(
            f"SELECT {queries.EXECUTION_COLUMNS} FROM harvest_executions "
            "WHERE workflow_name = ? AND workflow_id = ? ORDER BY id DESC",
            (workflow_name, workflow_id),
        ).fetchall()
        return [queries.execution_from_row(row) for row in rows]

    def insert_execution(self, new: NewExecution, started: HistoryEvent) -> None:
        if started.seq != 1:
            raise HarvestInternalError(
                f"a run starts at seq 1, not {started.seq} ({new.exec_id})"
            )
        # The row is inserted with its history's end already moved past the
        # WorkflowStarted event inserted next (no update of the new row).
        attrs = payloads.dumps(started.attrs)
        at = micros(started.at)
        self._conn.execute(
            "INSERT INTO harvest_executions (exec_id, workflow_name, workflow_id, state, attempt, "
            "input, memo, search_attributes, parent_exec_id, parent_close_policy, predecessor, "
            "started_at, deadline, retry_policy, not_before, next_seq, history_bytes, "
            "needs_decision) "
            "VALUES (?, ?, ?, 'RUNNING', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 2, ?, 1)",
            (
                new.exec_id,
                new.workflow_name,
                new.workflow_id,
                new.attempt,
                new.input,
                new.memo,
                new.search_attributes,
                new.parent_exec_id,
                new.parent_close_policy,
                new.predecessor,
                at,
                _opt_micros(new.deadline),
                new.retry_policy,
                _opt_micros(new.not_before),
                len(attrs),
            ),
        )
        self._conn.execute(
            "INSERT INTO harvest_events (exec_id, seq, type, at, attrs) VALUES (?, 1, ?, ?, ?)",
            (new.exec_id, started.type, at, attrs),
        )
        if new.parent_exec_id is not None:
            parent = self._runs.get(new.parent_exec_id)
            if parent is not None:
                parent.children = True
        # A decision in this same transaction (an eager first drive) reads
        # the new run from here instead of from the file.
        self._runs.put(started_run(new, (1, started.type, at, attrs)))

    def update_execution(self, exec_id: str, **fields: Any) -> None:
        if not fields:
            return
        assignments, values = _assignments(fields)
        self._conn.execute(
            f"UPDATE harvest_executions SET {assignments} WHERE exec_id = ?",
            (*values, exec_id),
        )
        self._runs.changed(exec_id, fields)

    def seal(
        self,
        exec_id: str,
        state: str,
        *,
        closed_at: datetime,
        output: str | None = None,
        error: str | None = None,
    ) -> None:
        conn = self._conn
        conn.execute(
            "UPDATE harvest_executions SET state = ?, closed_at = ?, output = ?, error = ?, "
            "needs_decision = 0 WHERE exec_id = ?",
            (state, micros(closed_at), output, error, exec_id),
        )
        # What the transaction knows the run does not hold needs no delete.
        run = self._runs.get(exec_id)
        if run is None or run.tasks:
            conn.execute("DELETE FROM harvest_tasks WHERE exec_id = ?", (exec_id,))
        if run is None or run.next_timer is not None:
            conn.execute("DELETE FROM harvest_timers WHERE exec_id = ?", (exec_id,))
        if run is None or run.mutexes:
            conn.execute("DELETE FROM harvest_mutexes WHERE exec_id = ?", (exec_id,))
        if run is None or run.signals:
            conn.execute(
                "DELETE FROM harvest_signals WHERE exec_id = ? AND idempotency_key IS NULL",
                (exec_id,),
            )
            conn.execute(
                "UPDATE harvest_signals SET delivered = 1 WHERE exec_id = ? AND delivered = 0",
                (exec_id,),
            )
        if run is not None:
            run.tasks = 0
            run.mutexes = False
            run.next_timer = None
            self._runs.changed(
                exec_id,
                {
                    "state": state,
                    "closed_at": closed_at,
                    "output": output,
                    "error": error,
                },
            )

    # -- events -------------------------------------------------------------

    def load_events(self, exec_id: str, after_seq: int = 0) -> list[HistoryEvent]:
        run = self._runs.get(exec_id)
        if run is not None:
            if after_seq >= run.record.next_seq - 1:
                return []  # the row says the history ends there
            tail = run.appended
            if tail and tail[0][0] <= after_seq + 1:
                # All of it was appended by this transaction: the same rows a
                # read would return, decoded the same way.
                rows = [row for row in tail if row[0] > after_seq]
                return verify.events_from_rows(self._conn, exec_id, rows, after_seq)
        return queries.load_events(self._conn, exec_id, after_seq)

    def append_events(
        self, exec_id: str, events: Sequence[HistoryEvent], **fields: Any
    ) -> None:
        if not events:
            self.update_execution(exec_id, **fields)
            return
        assignments, values = _assignments(fields) if fields else ("", [])
        first = events[0].seq
        encoded = []
        size = 0
        expected = first
        for event in events:
            if event.seq != expected:
                raise HarvestInternalError(
                    f"event seq {event.seq} does not continue run {exec_id} (next is {expected})"
                )
            attrs = payloads.dumps(event.attrs)
            size += len(attrs)
            encoded.append((exec_id, expected, event.type, micros(event.at), attrs))
            expected += 1
        # The guard on next_seq checks that the batch continues the run, in
        # the same statement that moves it on (no read first), which also
        # sets the caller's other columns of the row.
        sql = _APPEND_UPDATES.get(assignments)
        if sql is None:
            sets = f", {assignments}" if assignments else ""
            sql = _APPEND_UPDATES[assignments] = (
                "UPDATE harvest_executions SET next_seq = ?, "
                f"history_bytes = history_bytes + ?{sets} WHERE exec_id = ? AND next_seq = ?"
            )
        moved = self._conn.execute(
            sql, (expected, size, *values, exec_id, first)
        ).rowcount
        if moved != 1:
            row = self._conn.execute(
                "SELECT next_seq FROM harvest_executions WHERE exec_id = ?", (exec_id,)
            ).fetchone()
            if row is None:
                raise HarvestInternalError(f"append_events to unknown run {exec_id}")
            raise HarvestInternalError(
                f"event seq {first} does not continue run {exec_id} (next is {row[0]})"
            )
        self._conn.executemany(
            "INSERT INTO harvest_events (exec_id, seq, type, at, attrs) VALUES (?, ?, ?, ?, ?)",
            encoded,
        )
        run = self._runs.get(exec_id)
        if run is not None:
            fields["next_seq"] = expected
            fields["history_bytes"] = run.record.history_bytes + size
            run.record = with_fields(run.record, fields)
            rows = [row[1:] for row in encoded]
            tail = run.appended
            if tail and tail[-1][0] + 1 == first and len(tail) < KEPT_EVENTS:
                tail.extend(rows)
            else:  # a tail kept past its commit stays short (a longer one is read)
                run.appended = rows

    # -- signals ------------------------------------------------------------

    def staged_signals(
        self, exec_id: str, limit: int, max_bytes: int | None = None
    ) -> list[StagedSignal]:
        run = self._runs.get(exec_id)
        if run is not None and not run.signals:
            return []
        staged, seen_all = queries.staged_signals_read(
            self._conn, exec_id, limit, max_bytes
        )
        if run is not None:
            run.staged = (
                {s.signal_id: s.idempotency_key is not None for s in staged}
                if seen_all
                else None
            )
            if seen_all and not staged:
                run.signals = False
        return staged

    def mark_signals_delivered(self, exec_id: str, signal_ids: Sequence[int]) -> None:
        # An unkeyed signal goes, a keyed one stays delivered (its key dedupes).
        # Which is which the staged read said: one statement per signal.
        run = self._runs.get(exec_id)
        known = None if run is None else run.staged
        if known is None or not all(i in known for i in signal_ids):
            unkeyed = keyed = [(exec_id, i) for i in signal_ids]
            known = None
            if run is not None:
                run.staged = None
        else:
            unkeyed = [(exec_id, i) for i in signal_ids if not known[i]]
            keyed = [(exec_id, i) for i in signal_ids if known[i]]
        if unkeyed:
            self._conn.executemany(
                "DELETE FROM harvest_signals WHERE exec_id = ? AND id = ? "
                "AND idempotency_key IS NULL",
                unkeyed,
            )
        if keyed:
            self._conn.executemany(
                "UPDATE harvest_signals SET delivered = 1 WHERE exec_id = ? AND id = ?",
                keyed,
            )
        if run is not None and known is not None:
            for i in signal_ids:
                del known[i]
            if not known:  # none undelivered is left: a seal has nothing to do
                run.signals = False

    def stage_signal(
        self, exec_id: str, name: str, payload: str, key: str | None, at: datetime
    ) -> bool:
        try:
            self._conn.execute(
                "INSERT INTO harvest_signals (exec_id, name, payload, idempotency_key, "
                "received_at) VALUES (?, ?, ?, ?, ?)",
                (exec_id, name, payload, key, micros(at)),
            )
        except sqlite3.IntegrityError:
            return False
        self._conn.execute(
            "UPDATE harvest_executions SET needs_decision = 1 WHERE exec_id = ?",
            (exec_id,),
        )
        run = self._runs.get(exec_id)
        if run is not None:
            run.signals = True
            run.staged = None
        return True

    def move_staged_signals(self, from_exec: str, to_exec: str) -> None:
        """Hand undelivered signals to a successor run (continue-as-new)."""
        self._conn.execute(
            "UPDATE harvest_signals SET exec_id = ? WHERE exec_id = ? AND delivered = 0",
            (to_exec, from_exec),
        )
        for exec_id in (from_exec, to_exec):
            run = self._runs.get(exec_id)
            if run is not None:
                run.signals = True
                run.staged = None

    def signal_key_exists(self, exec_ids: Sequence[str], key: str) -> str | None:
        for exec_id in exec_ids:
            hit = self._conn.execute(
                "SELECT 1 FROM harvest_signals WHERE exec_id = ? AND idempotency_key = ?",
                (exec_id, key),
            ).fetchone()
            if hit is not None:
                return exec_id
        return None

    # -- timers -------------------------------------------------------------

    def due_timers(self, exec_id: str, now: datetime) -> list[TimerRow]:
        run = self._runs.get(exec_id)
        if run is not None and run.no_timer_due(now):
            return []
        rows = self._conn.execute(
            "SELECT timer_id, fire_at FROM harvest_timers WHERE exec_id = ? AND fire_at <= ? "
            "ORDER BY fire_at, timer_id",
            (exec_id, micros(now)),
        ).fetchall()
        return [TimerRow(timer_id=r[0], fire_at=from_micros(r[1])) for r in rows]

    def add_timer(self, exec_id: str, timer_id: str, fire_at: datetime) -> None:
        self._conn.execute(
            "INSERT OR IGNORE INTO harvest_timers (exec_id, timer_id, fire_at) VALUES (?, ?, ?)",
            (exec_id, timer_id, micros(fire_at)),
        )
        run = self._runs.get(exec_id)
        if run is not None:
            at = micros(fire_at)
            run.next_timer = at if run.next_timer is None else min(run.next_timer, at)

    def delete_timers(self, exec_id: str, timer_ids: Sequence[str]) -> None:
        self._conn.executemany(
            "DELETE FROM harvest_timers WHERE exec_id = ? AND timer_id = ?",
            [(exec_id, t) for t in timer_ids],
        )

    # -- tasks --------------------------------------------------------------

    def add_task(self, task: NewTask) -> int:
        cursor = self._conn.execute(task_rows.INSERT_TASK, task_rows.task_values(task))
        self._holds_task(task.exec_id)
        if cursor.lastrowid is None:
            raise HarvestInternalError("task insert returned no row id")
        return cursor.lastrowid

    def add_claimed_task(self, task: NewTask, now: datetime) -> TaskRecord:
        values = task_rows.task_values(task)
        cursor = self._conn.execute(
            task_rows.INSERT_CLAIMED_TASK, (*values, micros(now))
        )
        self._holds_task(task.exec_id)
        if cursor.lastrowid is None:
            raise HarvestInternalError("task insert returned no row id")
        return task_rows.claimed_task_record(cursor.lastrowid, values)

    def _holds_task(self, exec_id: str) -> None:
        run = self._runs.get(exec_id)
        if run is not None:
            run.tasks += 1

    def task(self, task_id: int) -> TaskRecord | None:
        row = self._conn.execute(
            f"SELECT {queries.TASK_COLUMNS} FROM harvest_tasks WHERE id = ?", (task_id,)
        ).fetchone()
        return None if row is None else queries.task_from_row(row)

    def claim_task(self, task_id: int, now: datetime) -> TaskRecord | None:
        """Flip a PENDING task RUNNING (compare-and-swap); None when it is gone or taken."""
        cursor = self._conn.execute(
            "UPDATE harvest_tasks SET status = 'RUNNING', claimed_at = ? "
            "WHERE id = ? AND status = 'PENDING'",
            (micros(now), task_id),
        )
        if cursor.rowcount != 1:
            return None
        return self.task(task_id)

    def delete_task(self, task_id: int) -> bool:
        gone = self._conn.execute(
            "DELETE FROM harvest_tasks WHERE id = ? RETURNING exec_id", (task_id,)
        ).fetchall()
        for (exec_id,) in gone:
            run = self._runs.get(exec_id)
            if run is not None:
                run.tasks -= 1
        return bool(gone)

    def reschedule_task(
        self, task_id: int, attempt: int, ready_at: datetime, last_error: str
    ) -> bool:
        moved = self._conn.execute(
            "UPDATE harvest_tasks SET status = 'PENDING', attempt = ?, ready_at = ?, "
            "last_error = ?, claimed_at = NULL WHERE id = ?",
            (attempt, micros(ready_at), last_error, task_id),
        )
        return moved.rowcount == 1

    def record_attempt(self, attempt: AttemptRecord) -> None:
        self._conn.execute(
            "INSERT INTO harvest_activity_attempts (exec_id, activity_id, activity_name, "
            "attempt, started_at, ended_at, outcome, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                attempt.exec_id,
                attempt.activity_id,
                attempt.activity_name,
                attempt.attempt,
                micros(attempt.started_at),
                micros(attempt.ended_at),
                attempt.outcome,
                attempt.error,
            ),
        )

    def add_ledger(self, entries: Sequence[LedgerEntry]) -> None:
        if not entries:
            return
        self._conn.executemany(
            "INSERT INTO harvest_llm_ledger (exec_id, activity, attempt, model, input_tokens, "
            "output_tokens, latency, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    e.exec_id,
                    e.activity,
                    e.attempt,
                    e.model,
                    e.input_tokens,
                    e.output_tokens,
                    e.latency,
                    micros(e.recorded_at),
                )
                for e in entries
            ],
        )

    def pending_task_count(self, exec_id: str) -> int:
        run = self._runs.get(exec_id)
        if run is not None:
            return run.tasks
        row = self._conn.execute(
            "SELECT COUNT(*) FROM harvest_tasks WHERE exec_id = ?", (exec_id,)
        ).fetchone()
        return int(row[0])

    def holds_no_work(self, exec_id: str) -> bool:
        # The task count is exact and a timer-less run has none (run_cache).
        run = self._runs.get(exec_id)
        return run is not None and not run.tasks and run.next_timer is None

    def tasks_of(self, exec_id: str) -> list[TaskRecord]:
        """Every task row of a run, oldest first."""
        run = self._runs.get(exec_id)
        if run is not None and not run.tasks:
            return []
        rows = self._conn.execute(
            f"SELECT {queries.TASK_COLUMNS} FROM harvest_tasks WHERE exec_id = ? ORDER BY id",
            (exec_id,),
        ).fetchall()
        return [queries.task_from_row(row) for row in rows]

    # -- logs ---------------------------------------------------------------

    def append_log_lines(
        self,
        exec_id: str,
        lines: Sequence[tuple[int, datetime, str]],
        max_lines: int | None,
    ) -> None:
        workflow_logs.append(self._conn, exec_id, lines, max_lines)

    # -- schedules and retention (issue 5) ------------------------------------

    def schedule(self, workflow_name: str) -> ScheduleRow | None:
        return schedule_sql.get(self._conn, workflow_name)

    def put_schedule(
        self,
        *,
        workflow_name: str,
        spec: str,
        input: str,
        overlap: str,
        max_active_runs: int,
        next_fire_at: datetime,
        paused: bool,
        now: datetime,
    ) -> None:
        schedule_sql.put(
            self._conn,
            workflow_name=workflow_name,
            spec=spec,
            input=input,
            overlap=overlap,
            max_active_runs=max_active_runs,
            next_fire_at=next_fire_at,
            paused=paused,
            now=now,
        )

    def update_schedule(self, workflow_name: str, now: datetime, **fields: Any) -> None:
        schedule_sql.update(self._conn, workflow_name, now, **fields)

    def delete_schedule(self, workflow_name: str) -> bool:
        return schedule_sql.delete(self._conn, workflow_name)

    def active_schedule_runs(
        self, workflow_name: str, id_prefix: str, now: datetime
    ) -> int:
        return schedule_sql.active_runs(self._conn, workflow_name, id_prefix, now)

    def purge_terminal_batch(self, cutoff: datetime, limit: int) -> int:
        self._runs.clear()  # rows go without being followed one by one
        return retention_sql.purge_batch(self._conn, cutoff, limit)

    # -- client commands (serving) ------------------------------------------------

    def claim_command(self, row_id: int) -> bool:
        return command_sql.is_pending(self._conn, row_id)

    def finish_command(
        self, row_id: int, reply: str, exec_id: str | None, now: datetime
    ) -> None:
        command_sql.finish(self._conn, row_id, reply, exec_id, now)

    def purge_applied_commands(self, cutoff: datetime, limit: int) -> int:
        return command_sql.purge_applied(self._conn, cutoff, limit)

    # -- run lifecycle (issue 3) ------------------------------------------------

    def running_children(self, exec_id: str) -> list[ExecutionRecord]:
        run = self._runs.get(exec_id)
        if run is not None and not run.children:
            return []
        rows = self._conn.execute(
            f"SELECT {queries.EXECUTION_COLUMNS} FROM harvest_executions "
            "WHERE parent_exec_id = ? AND state = 'RUNNING' ORDER BY id",
            (exec_id,),
        ).fetchall()
        return [queries.execution_from_row(row) for row in rows]

    def enqueue_mutex(self, key: str, exec_id: str, at: datetime) -> None:
        # queued_at orders the queue; it only grows per key, so two requests
        # at one clock instant keep their arrival order.
        row = self._conn.execute(
            "SELECT MAX(queued_at) FROM harvest_mutexes WHERE key = ?", (key,)
        ).fetchone()
        queued = max(micros(at), int(row[0]) + 1 if row[0] is not None else 0)
        self._conn.execute(
            "INSERT OR IGNORE INTO harvest_mutexes (key, exec_id, queued_at) VALUES (?, ?, ?)",
            (key, exec_id, queued),
        )
        run = self._runs.get(exec_id)
        if run is not None:
            run.mutexes = True

    def grant_mutex(self, key: str, exec_id: str) -> int | None:
        conn = self._conn
        held = conn.execute(
            "SELECT 1 FROM harvest_mutexes WHERE key = ? AND granted = 1", (key,)
        ).fetchone()
        if held is not None:
            return None
        head = conn.execute(
            "SELECT exec_id FROM harvest_mutexes WHERE key = ? AND granted = 0 "
            "ORDER BY queued_at, exec_id LIMIT 1",
            (key,),
        ).fetchone()
        if head is None or head[0] != exec_id:
            return None
        meta_key = f"mutex_lock_seq:{key}"
        row = conn.execute(
            "SELECT value FROM harvest_meta WHERE key = ?", (meta_key,)
        ).fetchone()
        lock_seq = (int(row[0]) if row is not None else 0) + 1
        conn.execute(
            "INSERT OR REPLACE INTO harvest_meta (key, value) VALUES (?, ?)",
            (meta_key, str(lock_seq)),
        )
        conn.execute(
            "UPDATE harvest_mutexes SET granted = 1, lock_seq = ? WHERE key = ? AND exec_id = ?",
            (lock_seq, key, exec_id),
        )
        return lock_seq

    def release_mutex(self, key: str, exec_id: str) -> None:
        self._conn.execute(
            "DELETE FROM harvest_mutexes WHERE key = ? AND exec_id = ?", (key, exec_id)
        )

    def expedite_local_tasks(self, exec_id: str, now: datetime) -> None:
        self._conn.execute(
            "UPDATE harvest_tasks SET ready_at = MIN(ready_at, ?) "
            "WHERE exec_id = ? AND local = 1 AND status = 'PENDING'",
            (micros(now), exec_id),
        )
