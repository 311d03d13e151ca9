"""PostgresWriteTxn: one write transaction's statements on Postgres (the WriteTxn protocol).

Several workers write one database at once, so the transaction takes the
locks SQLite's single writer never needed, always in one order (a run's
execution row before its task rows) so two workers do not deadlock on one run:
- a run's row is read FOR UPDATE: a decision, a completion and a signal of
  one run wait for each other, and each then reads the committed state;
- a decision holds its own run's row and never waits for another's (a
  signal's target, a child, an awaited run, a start key): two decisions
  whose runs signal each other would each hold one row and wait for the
  other's. It takes them NOWAIT, and one held elsewhere raises `RunBusy`:
  the decision stands back and runs again once the holder committed;
- starting by workflow id and the mutex queues take transaction-scoped
  advisory locks on their key, so two workers cannot both start one id or
  both be granted one mutex;
- a schedule row is read FOR UPDATE, so a slot fires once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine import payloads
from harvest_engine.errors import HarvestInternalError
from harvest_engine.store.postgres import batch_locks, leases, reads
from harvest_engine.store.postgres.notify import DONE_CHANNEL
from harvest_engine.store.postgres.txn_memory import NOISY, Append, Stored, TxnMemory
from harvest_engine.store.postgres.write_txn_side import SideTables
from harvest_engine.store.records import StagedSignal, TimerRow
from harvest_engine.store.txn_protocol import RunBusy
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime, timedelta

    from harvest_engine.events import HistoryEvent
    from harvest_engine.store.rows import (
        AttemptRecord,
        ExecutionRecord,
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


def _task_values(task: NewTask) -> tuple[object, ...]:
    return (
        task.exec_id,
        task.activity_id,
        task.activity_name,
        task.input,
        task.queue,
        task.max_attempts,
        micros(task.ready_at),
        micros(task.ready_at),
        task.retry_policy,
        task.start_to_close,
        _opt_micros(task.schedule_to_close_at),
        task.idempotency_key,
        int(task.local),
        task.heartbeat_timeout,
    )


def _assignments(fields: dict[str, Any]) -> tuple[str, list[Any]]:
    """`col = %s, ...` and the stored values for columns of the run's row."""
    unknown = set(fields) - _EXECUTION_FIELDS
    if unknown:
        raise HarvestInternalError(
            f"update_execution got unknown columns {sorted(unknown)}"
        )
    values = [_opt_micros(v) if k in _TIME_COLUMNS else v for k, v in fields.items()]
    return ", ".join(f"{k} = %s" for k in fields), values


def _notifying_end(sql: str, fields: dict[str, Any]) -> str:
    """`sql` (an UPDATE of one run's row), notifying DONE_CHANNEL when it moves the run's end.

    A reseal or an import sets `state` / `successor`: a client awaiting the
    run's end hears it at the commit.
    """
    if "state" not in fields and "successor" not in fields:
        return sql
    return (
        f"WITH moved AS ({sql} RETURNING exec_id) "
        f"SELECT pg_notify('{DONE_CHANNEL}', exec_id) FROM moved"
    )


class PostgresWriteTxn(SideTables):
    """The WriteTxn of one Postgres transaction (READ COMMITTED plus row locks)."""

    def __init__(
        self,
        conn: psycopg.Connection[tuple[Any, ...]],
        worker_id: str,
        lease: timedelta,
        memory: TxnMemory,
        claimed: list[int] | None = None,
    ) -> None:
        self._raw = conn
        # What the transaction (and its savepoints) wrote or learnt: see txn_memory.
        self.memory = memory
        self.worker_id = worker_id
        self.lease = lease
        self.undo: list[Callable[[], None]] = []
        # Task ids this transaction (and any it joins) took under this worker:
        # if its COMMIT fails, the store releases them, since the commit may
        # have landed unseen and a claim nobody runs must not be renewed forever.
        self.claimed: list[int] = [] if claimed is None else claimed
        # The run this transaction decides (lock_for_decision): other runs'
        # rows and keys are then taken without waiting (see the docstring).
        self._deciding: str | None = None
        # The row `lock_for_decision` read while locking it, for the
        # `execution()` call that follows it at once; any other statement
        # (through `_conn`) may change the row, so it drops the copy.
        self._locked_row: ExecutionRecord | None = None

    @property
    def _conn(self) -> psycopg.Connection[tuple[Any, ...]]:
        self._locked_row = None
        return self._raw

    def on_rollback(self, fn: Callable[[], None]) -> None:
        """Call `fn` if this transaction rolls back, so in-memory state follows the database."""
        self.undo.append(fn)

    def _key_lock(self, *parts: str) -> None:
        """Hold an advisory lock on a key until the transaction ends (RunBusy in a decision)."""
        key = "\x1f".join(parts)
        if self._deciding is None:
            self._conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,)
            )
            return
        row = self._conn.execute(
            "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))", (key,)
        ).fetchone()
        if row is None or not row[0]:
            raise RunBusy(self._deciding)

    def _waits_for(self, exec_id: str) -> bool:
        """Whether a lock on this run's row may wait (False: NOWAIT, in a decision of another run)."""
        return self._deciding is None or self._deciding == exec_id

    def _lock_row(self, sql: str, exec_id: str) -> tuple[Any, ...] | None:
        """Run a ``... FOR UPDATE`` read of `exec_id`'s row; NOWAIT unless it may wait."""
        if self._waits_for(exec_id):
            return self._conn.execute(sql, (exec_id,)).fetchone()
        try:
            return self._conn.execute(sql + " NOWAIT", (exec_id,)).fetchone()
        except psycopg.errors.LockNotAvailable as exc:
            raise RunBusy(exec_id) from exc

    # -- runs ---------------------------------------------------------------

    def lock_runs(
        self,
        exec_ids: Sequence[str],
        *,
        deciding_at: datetime | None = None,
        task_ids: Sequence[int] = (),
    ) -> set[str]:
        """Lock a batch's runs (and tasks) in one round trip (`batch_locks`)."""
        return batch_locks.lock_runs(
            self._conn,
            self.memory,
            exec_ids,
            deciding_at=_opt_micros(deciding_at),
            task_ids=task_ids,
        )

    def lock_for_decision(self, exec_id: str) -> bool:
        """Lock the run's row for this decision; False when another worker holds it now.

        A run of the batch (`lock_runs`) is answered from memory. Else the
        row is read in the same statement and kept for the decision's
        `execution()` that follows (one round trip instead of two), with
        whether the run has any staged signal, timer or mutex entry
        (`txn_memory`).
        """
        if exec_id in self.memory.rows:
            self._deciding = exec_id
            return True  # held by the transaction (an unknown run reads None)
        if exec_id in self.memory.skipped:
            return False
        row = self._conn.execute(
            f"SELECT {reads.EXECUTION_COLUMNS}, {batch_locks.FLAGS} "
            "FROM harvest_executions e WHERE exec_id = %s FOR UPDATE SKIP LOCKED",
            (exec_id,),
        ).fetchone()
        if row is not None:
            self._deciding = exec_id
            self._locked_row, self.memory.quiet[exec_id] = batch_locks.split(row)
            return True
        gone = self._conn.execute(
            "SELECT 1 FROM harvest_executions WHERE exec_id = %s", (exec_id,)
        ).fetchone()
        return gone is None

    def execution(self, exec_id: str) -> ExecutionRecord | None:
        if exec_id in self.memory.rows:
            return self.memory.rows[exec_id]  # locked by this transaction
        kept = self._locked_row
        if kept is not None and kept.exec_id == exec_id:
            self._locked_row = None
            return kept  # read under this transaction's lock, unchanged since
        if self._waits_for(exec_id):
            return reads.execution(self._conn, exec_id, lock=True)
        row = self._lock_row(
            f"SELECT {reads.EXECUTION_COLUMNS} FROM harvest_executions "
            "WHERE exec_id = %s FOR UPDATE",
            exec_id,
        )
        return None if row is None else reads.execution_from_row(row)

    def runs_of_key(
        self, workflow_name: str, workflow_id: str
    ) -> list[ExecutionRecord]:
        self._key_lock("start", workflow_name, workflow_id)
        rows = self._conn.execute(
            f"SELECT {reads.EXECUTION_COLUMNS} FROM harvest_executions "
            "WHERE workflow_name = %s AND workflow_id = %s ORDER BY id DESC",
            (workflow_name, workflow_id),
        ).fetchall()
        return [reads.execution_from_row(row) for row in rows]

    def insert_execution(self, new: NewExecution, started: HistoryEvent) -> None:
        if new.parent_exec_id is not None:
            self.memory.quiet.pop(new.parent_exec_id, None)  # a running child now
        self._conn.execute(
            "INSERT INTO harvest_executions (exec_id, workflow_name, workflow_id, state, "
            "attempt, input, memo, search_attributes, parent_exec_id, parent_close_policy, "
            "predecessor, started_at, deadline, retry_policy, not_before, next_seq, "
            "needs_decision) VALUES "
            "(%s, %s, %s, 'RUNNING', %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 1, 1)",
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
                micros(started.at),
                _opt_micros(new.deadline),
                new.retry_policy,
                _opt_micros(new.not_before),
            ),
        )
        self.append_events(new.exec_id, [started])

    def update_execution(self, exec_id: str, **fields: Any) -> None:
        if not fields:
            return
        assignments, values = _assignments(fields)
        sql = f"UPDATE harvest_executions SET {assignments} WHERE exec_id = %s"
        self._conn.execute(_notifying_end(sql, fields), (*values, exec_id))
        self.memory.changed(exec_id, fields)
        if fields.get("state") == "RUNNING":
            self.memory.forget_children()  # a child back to RUNNING (not known whose)

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
        self.memory.rows.pop(exec_id, None)
        held = self.memory.held_tasks
        for task_id in [t for t, run in held.items() if run == exec_id]:
            del held[task_id]  # deleted below
        # One statement for the run's row, its tasks, timers and signals (the
        # keyed signals stay, delivered, for their idempotency); its notice
        # tells a client waiting on the run's result (at commit).
        conn.execute(
            "WITH sealed AS (UPDATE harvest_executions SET state = %(state)s, "
            "closed_at = %(closed)s, output = %(output)s, error = %(error)s, "
            "needs_decision = 0 WHERE exec_id = %(id)s RETURNING exec_id), "
            "tasks AS (DELETE FROM harvest_tasks WHERE exec_id = %(id)s), "
            "timers AS (DELETE FROM harvest_timers WHERE exec_id = %(id)s), "
            "dropped AS (DELETE FROM harvest_signals WHERE exec_id = %(id)s "
            "AND idempotency_key IS NULL), "
            "kept AS (UPDATE harvest_signals SET delivered = 1 WHERE exec_id = %(id)s "
            "AND delivered = 0 AND idempotency_key IS NOT NULL) "
            f"SELECT pg_notify('{DONE_CHANNEL}', exec_id) FROM sealed",
            {
                "state": state,
                "closed": micros(closed_at),
                "output": output,
                "error": error,
                "id": exec_id,
            },
        )
        if self.memory.quiet.get(exec_id, NOISY).mutexes:
            return  # no mutex entry when its row was locked, and none queued since
        keys = conn.execute(
            "SELECT key FROM harvest_mutexes WHERE exec_id = %s ORDER BY key",
            (exec_id,),
        ).fetchall()
        if keys:
            for (key,) in keys:
                self._key_lock("mutex", key)
            conn.execute("DELETE FROM harvest_mutexes WHERE exec_id = %s", (exec_id,))

    # -- events -------------------------------------------------------------

    def load_events(self, exec_id: str, after_seq: int = 0) -> list[HistoryEvent]:
        known = self.memory.events_after(exec_id, after_seq)
        if known is not None:
            return known  # this transaction appended every one of them
        return reads.load_events(self._conn, exec_id, after_seq)

    def append_events(
        self, exec_id: str, events: Sequence[HistoryEvent], **fields: Any
    ) -> None:
        """Append in one statement that also sets `fields` of the run's row.

        The UPDATE of the run's row (locked until the transaction ends) moves
        next_seq only if it was the first event's seq, and feeds the INSERT
        of every event; the rows written are counted before the commit
        (`txn_memory`), so a run that is unknown or whose next seq is another
        fails the transaction with nothing written.
        """
        if not events:
            self.update_execution(exec_id, **fields)
            return
        if not self._waits_for(exec_id) and exec_id not in self.memory.rows:
            # Another run's row, in a decision: taken NOWAIT (RunBusy if held).
            self._lock_row(
                "SELECT 1 FROM harvest_executions WHERE exec_id = %s FOR UPDATE",
                exec_id,
            )
        _, values = _assignments(fields)  # refuses an unknown column
        sets = "".join(f", {name} = %(f{i})s" for i, name in enumerate(fields))
        first = events[0].seq
        seqs: list[int] = []
        types: list[str] = []
        ats: list[int] = []
        attrs: list[str] = []
        stored: list[Stored] = []
        for offset, event in enumerate(events):
            if event.seq != first + offset:
                raise HarvestInternalError(
                    f"event seq {event.seq} does not continue run {exec_id} "
                    f"(next is {first + offset})"
                )
            seqs.append(event.seq)
            types.append(event.type)
            ats.append(micros(event.at))
            attrs.append(payloads.dumps(event.attrs))
            stored.append((seqs[-1], types[-1], ats[-1], attrs[-1]))
        args: dict[str, object] = {f"f{i}": v for i, v in enumerate(values)}
        args_size = sum(len(a) for a in attrs)
        cursor = self._conn.execute(
            "WITH moved AS (UPDATE harvest_executions SET next_seq = %(end)s, "
            f"history_bytes = history_bytes + %(size)s{sets} "
            "WHERE exec_id = %(id)s AND next_seq = %(first)s RETURNING exec_id) "
            "INSERT INTO harvest_events (exec_id, seq, type, at, attrs) "
            "SELECT moved.exec_id, e.seq, e.type, e.at, e.attrs FROM moved, "
            "unnest(%(seqs)s::integer[], %(types)s::text[], %(ats)s::bigint[], "
            "%(attrs)s::text[]) AS e(seq, type, at, attrs)",
            {
                **args,
                "end": first + len(events),
                "size": args_size,
                "id": exec_id,
                "first": first,
                "seqs": seqs,
                "types": types,
                "ats": ats,
                "attrs": attrs,
            },
        )
        # Counted with the others before the commit (no round trip per append).
        self.memory.appended(Append(cursor, exec_id, first, len(events)), stored)
        self.memory.changed(exec_id, fields, first + len(events), args_size)
        if "state" in fields or "successor" in fields:
            # A client awaiting the run's end hears it at the commit.
            self._conn.execute("SELECT pg_notify(%s, %s)", (DONE_CHANNEL, exec_id))

    # -- signals ------------------------------------------------------------

    def staged_signals(
        self, exec_id: str, limit: int, max_bytes: int | None = None
    ) -> list[StagedSignal]:
        if self.memory.quiet.get(exec_id, NOISY).signals:
            return []  # none when its row was locked, and none staged since
        return reads.staged_signals(self._conn, exec_id, limit, max_bytes)

    def mark_signals_delivered(self, exec_id: str, signal_ids: Sequence[int]) -> None:
        ids = list(signal_ids)
        if not ids:
            return
        self._conn.execute(
            "DELETE FROM harvest_signals WHERE exec_id = %s AND id = ANY(%s) "
            "AND idempotency_key IS NULL",
            (exec_id, ids),
        )
        self._conn.execute(
            "UPDATE harvest_signals SET delivered = 1 WHERE exec_id = %s AND id = ANY(%s)",
            (exec_id, ids),
        )

    def stage_signal(
        self, exec_id: str, name: str, payload: str, key: str | None, at: datetime
    ) -> bool:
        self.memory.quiet.pop(exec_id, None)
        row = self._conn.execute(
            "INSERT INTO harvest_signals (exec_id, name, payload, idempotency_key, "
            "received_at) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (exec_id, idempotency_key) WHERE idempotency_key IS NOT NULL "
            "DO NOTHING RETURNING id",
            (exec_id, name, payload, key, micros(at)),
        ).fetchone()
        if row is None:
            return False
        self._conn.execute(
            "UPDATE harvest_executions SET needs_decision = 1 WHERE exec_id = %s",
            (exec_id,),
        )
        return True

    def move_staged_signals(self, from_exec: str, to_exec: str) -> None:
        self.memory.quiet.pop(to_exec, None)
        self._conn.execute(
            "UPDATE harvest_signals SET exec_id = %s WHERE exec_id = %s AND delivered = 0",
            (to_exec, from_exec),
        )

    def signal_key_exists(self, exec_ids: Sequence[str], key: str) -> str | None:
        for exec_id in exec_ids:
            hit = self._conn.execute(
                "SELECT 1 FROM harvest_signals WHERE exec_id = %s AND idempotency_key = %s",
                (exec_id, key),
            ).fetchone()
            if hit is not None:
                return exec_id
        return None

    # -- timers -------------------------------------------------------------

    def due_timers(self, exec_id: str, now: datetime) -> list[TimerRow]:
        if self.memory.quiet.get(exec_id, NOISY).timers:
            return []  # no timer when its row was locked, and none added since
        rows = self._conn.execute(
            "SELECT timer_id, fire_at FROM harvest_timers WHERE exec_id = %s "
            "AND fire_at <= %s ORDER BY fire_at, timer_id",
            (exec_id, micros(now)),
        ).fetchall()
        return [TimerRow(timer_id=r[0], fire_at=from_micros(r[1])) for r in rows]

    def add_timer(self, exec_id: str, timer_id: str, fire_at: datetime) -> None:
        self.memory.quiet.pop(exec_id, None)
        self._conn.execute(
            "INSERT INTO harvest_timers (exec_id, timer_id, fire_at) VALUES (%s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            (exec_id, timer_id, micros(fire_at)),
        )

    def delete_timers(self, exec_id: str, timer_ids: Sequence[str]) -> None:
        ids = list(timer_ids)
        if ids:
            self._conn.execute(
                "DELETE FROM harvest_timers WHERE exec_id = %s AND timer_id = ANY(%s)",
                (exec_id, ids),
            )

    # -- tasks --------------------------------------------------------------

    def add_task(self, task: NewTask) -> int:
        row = self._conn.execute(
            "INSERT INTO harvest_tasks (exec_id, activity_id, activity_name, input, queue, "
            "max_attempts, ready_at, scheduled_at, retry_policy, start_to_close, "
            "schedule_to_close_at, idempotency_key, local, heartbeat_timeout) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            _task_values(task),
        ).fetchone()
        if row is None:
            raise HarvestInternalError("task insert returned no row id")
        return int(row[0])

    def task(self, task_id: int) -> TaskRecord | None:
        # Lock order: the run's row first, then the task's (as a decision does).
        # One statement: the run's row is locked first (its CTE is scanned
        # before the lateral task read), then the task's. The run's row is
        # kept for the `execution()` that recording a task makes next.
        width = len(reads.EXECUTION_COLUMNS.split(","))
        row = self._conn.execute(
            f"WITH run AS MATERIALIZED (SELECT {reads.EXECUTION_COLUMNS} "
            "FROM harvest_executions WHERE exec_id = "
            "(SELECT exec_id FROM harvest_tasks WHERE id = %(id)s) FOR UPDATE) "
            f"SELECT run.*, t.* FROM run LEFT JOIN LATERAL (SELECT {reads.TASK_COLUMNS} "
            "FROM harvest_tasks WHERE id = %(id)s FOR UPDATE) t ON true",
            {"id": task_id},
        ).fetchone()
        if row is None:
            return None
        self._locked_row = reads.execution_from_row(row[:width])
        return None if row[width] is None else reads.task_from_row(row[width:])

    def claim_task(self, task_id: int, now: datetime) -> TaskRecord | None:
        got = leases.claim(self, self._conn, task_id, now, self.worker_id, self.lease)
        if got is not None:
            self.claimed.append(task_id)
        return got

    def add_claimed_task(self, task: NewTask, now: datetime) -> TaskRecord:
        # The id is reserved ahead (txn_memory), so the insert travels
        # pipelined and the record is the row as the server stores it.
        task_id = self.memory.next_task_id(self._raw)
        self.claimed.append(task_id)
        values = _task_values(task)
        self._conn.execute(
            "INSERT INTO harvest_tasks (id, exec_id, activity_id, activity_name, input, "
            "queue, max_attempts, ready_at, scheduled_at, retry_policy, start_to_close, "
            "schedule_to_close_at, idempotency_key, local, heartbeat_timeout, status, "
            "claimed_at, worker_id, lease_expires_at) VALUES "
            "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 'RUNNING', %s, "
            "%s, clock_timestamp() + COALESCE(make_interval(secs => %s), %s::interval))",
            (
                task_id,
                *values,
                micros(now),
                self.worker_id,
                task.heartbeat_timeout,
                self.lease,
            ),
        )
        return reads.task_from_row(
            (
                task_id,
                task.exec_id,
                task.activity_id,
                task.activity_name,
                task.input,
                task.queue,
                "RUNNING",
                1,  # the column's default: a new task's first attempt
                task.max_attempts,
                micros(task.ready_at),
                micros(task.ready_at),
                None,
                None,
                task.retry_policy,
                None if task.start_to_close is None else float(task.start_to_close),
                _opt_micros(task.schedule_to_close_at),
                task.idempotency_key,
                int(task.local),
            )
        )

    def delete_task(self, task_id: int) -> bool:
        if self.memory.held_tasks.pop(task_id, None) is not None:
            # Locked by this transaction and still there: the DELETE needs no
            # answer now; its row count is checked before the commit.
            cursor = self._conn.execute(
                "DELETE FROM harvest_tasks WHERE id = %s", (task_id,)
            )
            self.memory.counted.append((cursor, 1, f"deleting task {task_id}"))
            return True
        # RETURNING: the answer arrives with a fetch (rowcount would need a sync).
        return (
            self._conn.execute(
                "DELETE FROM harvest_tasks WHERE id = %s RETURNING id", (task_id,)
            ).fetchone()
            is not None
        )

    def reschedule_task(
        self, task_id: int, attempt: int, ready_at: datetime, last_error: str
    ) -> bool:
        moved = self._conn.execute(
            "UPDATE harvest_tasks SET status = 'PENDING', attempt = %s, ready_at = %s, "
            "last_error = %s, claimed_at = NULL, worker_id = NULL, lease_expires_at = NULL "
            "WHERE id = %s RETURNING id",
            (attempt, micros(ready_at), last_error, task_id),
        ).fetchone()
        return moved is not None

    def record_attempt(self, attempt: AttemptRecord) -> None:
        self._conn.execute(
            "INSERT INTO harvest_activity_attempts (exec_id, activity_id, activity_name, "
            "attempt, started_at, ended_at, outcome, error) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
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

    def pending_task_count(self, exec_id: str) -> int:
        row = self._conn.execute(
            "SELECT COUNT(*) FROM harvest_tasks WHERE exec_id = %s", (exec_id,)
        ).fetchone()
        return int(row[0]) if row is not None else 0

    def peek_execution(self, exec_id: str) -> ExecutionRecord | None:
        return self.execution(exec_id)

    def holds_no_work(self, exec_id: str) -> bool:
        del exec_id  # other workers may decide the run after the commit: always read
        return False

    def tasks_of(self, exec_id: str) -> list[TaskRecord]:
        rows = self._conn.execute(
            f"SELECT {reads.TASK_COLUMNS} FROM harvest_tasks WHERE exec_id = %s ORDER BY id",
            (exec_id,),
        ).fetchall()
        return [reads.task_from_row(row) for row in rows]

    # -- run lifecycle (issue 3) ------------------------------------------------

    def running_children(self, exec_id: str) -> list[ExecutionRecord]:
        if self.memory.quiet.get(exec_id, NOISY).children:
            return []  # none when its row was locked, and none started since
        rows = self._conn.execute(
            f"SELECT {reads.EXECUTION_COLUMNS} FROM harvest_executions "
            "WHERE parent_exec_id = %s AND state = 'RUNNING' ORDER BY id",
            (exec_id,),
        ).fetchall()
        return [reads.execution_from_row(row) for row in rows]

    def expedite_local_tasks(self, exec_id: str, now: datetime) -> None:
        self._conn.execute(
            "UPDATE harvest_tasks SET ready_at = LEAST(ready_at, %s) "
            "WHERE exec_id = %s AND local = 1 AND status = 'PENDING'",
            (micros(now), exec_id),
        )
