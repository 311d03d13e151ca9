"""Tasks of a SQLite write transaction: activity rows, their claims and attempts.

`SqliteWriteTxn` (write_txn.py) inherits these; they use only the
connection and the run cache (which keeps each run's exact task count)
of the transaction's state (txn_state.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors import HarvestInternalError
from harvest_engine.store.sql import columns
from harvest_engine.store.sql.dialect import SQLITE
from harvest_engine.store.sql.reads import SQLITE_READS
from harvest_engine.store.sql.run_rows import attempt_values, expedite_local_sql
from harvest_engine.store.sqlite import task_rows
from harvest_engine.store.sqlite.txn_state import TxnState
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.store.rows import AttemptRecord, NewTask, TaskRecord

_EXPEDITE_LOCAL = expedite_local_sql(SQLITE)


class TaskTable(TxnState):
    """WriteTxn methods on harvest_tasks and harvest_activity_attempts."""

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
            f"SELECT {columns.TASK_COLUMNS} FROM harvest_tasks WHERE id = ?", (task_id,)
        ).fetchone()
        return None if row is None else columns.task_from_row(row)

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
            task_rows.INSERT_ATTEMPT,
            (attempt.exec_id, *attempt_values(attempt)),
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
        return SQLITE_READS.tasks_of(self._conn, exec_id)

    def expedite_local_tasks(self, exec_id: str, now: datetime) -> None:
        self._conn.execute(_EXPEDITE_LOCAL, (micros(now), exec_id))
