"""Tasks of a Postgres write transaction: activity rows, their leased claims and attempts.

`PostgresWriteTxn` (write_txn.py) inherits these; a task's row is locked
after its run's (the lock order of write_txn_locks.py), and a claim takes
a lease (leases.py) under the transaction's worker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.errors import HarvestInternalError
from harvest_engine.store.postgres import deferred, leases
from harvest_engine.store.postgres.txn_state import TxnState
from harvest_engine.store.sql import columns
from harvest_engine.store.sql.dialect import POSTGRES
from harvest_engine.store.sql.reads import POSTGRES_READS
from harvest_engine.store.sql.run_rows import attempt_values, expedite_local_sql
from harvest_engine.timestamps import micros, opt_micros

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.store.rows import (
        AttemptRecord,
        NewTask,
        TaskRecord,
    )

_EXPEDITE_LOCAL = expedite_local_sql(POSTGRES)


def _task_values(task: NewTask) -> tuple[Any, ...]:
    ready = micros(task.ready_at)
    return (
        task.exec_id,
        task.activity_id,
        task.activity_name,
        task.input,
        task.queue,
        task.max_attempts,
        ready,
        ready,
        task.retry_policy,
        task.start_to_close,
        opt_micros(task.schedule_to_close_at),
        task.idempotency_key,
        int(task.local),
        task.heartbeat_timeout,
    )


class TaskTable(TxnState):
    """WriteTxn methods on harvest_tasks and harvest_activity_attempts."""

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
        width = len(columns.EXECUTION_COLUMNS.split(","))
        row = self._conn.execute(
            f"WITH run AS MATERIALIZED (SELECT {columns.EXECUTION_COLUMNS} "
            "FROM harvest_executions WHERE exec_id = "
            "(SELECT exec_id FROM harvest_tasks WHERE id = %(id)s) FOR UPDATE) "
            f"SELECT run.*, t.* FROM run LEFT JOIN LATERAL (SELECT {columns.TASK_COLUMNS} "
            "FROM harvest_tasks WHERE id = %(id)s FOR UPDATE) t ON true",
            {"id": task_id},
        ).fetchone()
        if row is None:
            return None
        self._locked_row = columns.execution_from_row(row[:width])
        return None if row[width] is None else columns.task_from_row(row[width:])

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
        # Written with the run's next writes (`deferred`): its append, say.
        held = self.memory.held
        claimed = (
            task_id,
            *values,
            micros(now),
            self.worker_id,
            task.heartbeat_timeout,
            self.lease,
        )
        held.pending.append(deferred.Piece(task.exec_id, held.now(), claimed=claimed))
        return columns.task_from_row(
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
                values[6],  # ready_at (micros, as stored)
                values[7],  # scheduled_at
                None,
                None,
                task.retry_policy,
                None if task.start_to_close is None else float(task.start_to_close),
                values[10],  # schedule_to_close_at
                task.idempotency_key,
                int(task.local),
            )
        )

    def delete_task(self, task_id: int) -> bool:
        exec_id = self.memory.held_tasks.pop(task_id, None)
        if exec_id is not None:
            # Locked by this transaction and still there: the DELETE needs no
            # answer now; it travels with the run's next writes (`deferred`),
            # its row count checked before the commit.
            held = self.memory.held
            held.pending.append(deferred.Piece(exec_id, held.now(), task=task_id))
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
        # Written with the run's next writes (`deferred`): nobody reads it here.
        held = self.memory.held
        held.pending.append(
            deferred.Piece(attempt.exec_id, held.now(), attempt=attempt_values(attempt))
        )

    def pending_task_count(self, exec_id: str) -> int:
        row = self._conn.execute(
            "SELECT COUNT(*) FROM harvest_tasks WHERE exec_id = %s", (exec_id,)
        ).fetchone()
        return int(row[0]) if row is not None else 0

    def holds_no_work(self, exec_id: str) -> bool:
        del exec_id  # other workers may decide the run after the commit: always read
        return False

    def tasks_of(self, exec_id: str) -> list[TaskRecord]:
        return POSTGRES_READS.tasks_of(self._conn, exec_id)

    def expedite_local_tasks(self, exec_id: str, now: datetime) -> None:
        self._conn.execute(_EXPEDITE_LOCAL, (micros(now), exec_id))
