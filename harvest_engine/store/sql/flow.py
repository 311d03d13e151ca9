"""Flow-control SQL, written once: queues, the runs waiting in them, and waiting activity attempts.

`FlowTables` is what a write transaction lends the runtime's admission
(`WriteTxn.flow()`): every call runs on the transaction's connection, so
a slot counted, a token taken and a run or attempt admitted commit together.
On Postgres `lock_queue` takes the queue's row FOR UPDATE first, so two
workers admitting into one queue take turns instead of both counting the
same free slot (never check-then-act); SQLite's one writer holds the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.store.sql.dialect import POSTGRES, SQLITE, Dialect
from harvest_engine.store.sql.flow_rows import (
    QUEUE_COLUMNS,
    WAIT_COLUMNS,
    QueueRow,
    WaitRow,
    wait_from_row,
)
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.store.sql.executes import Executes

# A task's slot in an activity's own queue is any of its live rows; in a named
# queue, any live row of that queue. WAITING rows wait for one.
_HOLDING = "status IN ('PENDING', 'RUNNING')"


class FlowSql:
    """One dialect's flow-control statements, rendered once (built at import)."""

    def __init__(self, dialect: Dialect) -> None:
        r = dialect.render
        self.dialect = dialect
        self.put_queue = r(
            "INSERT INTO harvest_flow_queues (name, concurrency, worker_concurrency, "
            "rate_limit, rate_per, partition_concurrency, priority, quota_limit, "
            "quota_per, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET concurrency = excluded.concurrency, "
            "worker_concurrency = excluded.worker_concurrency, "
            "rate_limit = excluded.rate_limit, rate_per = excluded.rate_per, "
            "partition_concurrency = excluded.partition_concurrency, "
            "priority = excluded.priority, quota_limit = excluded.quota_limit, "
            "quota_per = excluded.quota_per, updated_at = excluded.updated_at"
        )
        self.queue = r(
            f"SELECT {QUEUE_COLUMNS} FROM harvest_flow_queues WHERE name = ?"
        )
        self.lock_queue = self.queue + dialect.for_update
        self.all_queues = (
            f"SELECT {QUEUE_COLUMNS} FROM harvest_flow_queues ORDER BY name"
        )
        self.set_token = r(
            "UPDATE harvest_flow_queues SET next_token_at = ? WHERE name = ?"
        )
        self.set_quota = r(
            "UPDATE harvest_flow_queues SET quota_start = ?, quota_used = ? WHERE name = ?"
        )
        self.enqueue = r(
            "INSERT INTO harvest_flow_waits (exec_id, queue, workflow_queue, priority, "
            "partition_key, dedup_id, enqueued_at, due_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        )
        self.dedup_holder = r(
            "SELECT w.exec_id, (SELECT e.state FROM harvest_executions e "
            "WHERE e.exec_id = w.exec_id) AS state FROM harvest_flow_waits w "
            "WHERE w.queue = ? AND w.dedup_id = ?"
        )
        # Admitted rows of runs that ended (or were purged) hold no slot: dropped.
        # Each statement seeks one index (`queue` and `workflow_queue` apart).
        ended = (
            " AND NOT EXISTS (SELECT 1 FROM harvest_executions e WHERE "
            "e.exec_id = harvest_flow_waits.exec_id AND e.state = 'RUNNING')"
        )
        self.release_ended = r(
            "DELETE FROM harvest_flow_waits WHERE queue = ? AND admitted_at IS NOT NULL"
            + ended
        )
        self.release_ended_also = r(
            "DELETE FROM harvest_flow_waits WHERE workflow_queue = ? "
            "AND admitted_at IS NOT NULL" + ended
        )
        self.drop_waiting_ended = r(
            "DELETE FROM harvest_flow_waits WHERE admitted_at IS NULL AND queue = ? "
            "AND NOT EXISTS (SELECT 1 FROM harvest_executions e WHERE "
            "e.exec_id = harvest_flow_waits.exec_id AND e.state = 'ENQUEUED')"
        )
        self.running = r(
            "SELECT (SELECT COUNT(*) FROM harvest_flow_waits WHERE queue = ? "
            "AND admitted_at IS NOT NULL) + (SELECT COUNT(*) FROM harvest_flow_waits "
            "WHERE workflow_queue = ? AND admitted_at IS NOT NULL)"
        )
        self.running_by = r(
            "SELECT COUNT(*) FROM harvest_flow_waits WHERE admitted_at IS NOT NULL "
            "AND queue = ? AND admitted_by = ?"
        )
        self.running_partitions = r(
            "SELECT partition_key, COUNT(*) FROM harvest_flow_waits WHERE "
            "admitted_at IS NOT NULL AND queue = ? GROUP BY partition_key"
        )
        # No join: a planner without statistics (a young Postgres table) may
        # scan every waiting run's row per candidate. The caller reads each
        # candidate's run and passes over one that ended while it waited.
        self.candidates = r(
            f"SELECT {WAIT_COLUMNS} FROM harvest_flow_waits WHERE queue = ? "
            "AND admitted_at IS NULL AND due_at <= ? ORDER BY priority, id LIMIT ?"
        )
        self.drop_wait = r("DELETE FROM harvest_flow_waits WHERE exec_id = ?")
        self.admit = r(
            "UPDATE harvest_flow_waits SET admitted_at = ?, admitted_by = ? "
            "WHERE exec_id = ? AND admitted_at IS NULL"
        )
        self.wait_of = r(
            f"SELECT {WAIT_COLUMNS} FROM harvest_flow_waits WHERE exec_id = ?"
        )
        self.ahead = r(
            "SELECT COUNT(*) FROM harvest_flow_waits WHERE queue = ? AND "
            "admitted_at IS NULL AND (priority < ? OR (priority = ? AND id < ?))"
        )
        # One index seek per queue (harvest_flow_waits_due), not a scan of the waits.
        self.waiting_queues = (
            "SELECT name, (SELECT MIN(w.due_at) FROM harvest_flow_waits w "
            "WHERE w.queue = q.name AND w.admitted_at IS NULL) FROM harvest_flow_queues q"
        )
        self.hold_task = r("UPDATE harvest_tasks SET status = 'WAITING' WHERE id = ?")
        self.open_task = r(
            "UPDATE harvest_tasks SET status = 'PENDING' WHERE id = ? AND status = 'WAITING'"
        )
        self.waiting_tasks = (
            "SELECT id, activity_name, queue, ready_at FROM harvest_tasks "
            "WHERE status = 'WAITING' ORDER BY ready_at, id"
        )
        self.activity_holding = r(
            f"SELECT COUNT(*) FROM harvest_tasks WHERE activity_name = ? AND {_HOLDING}"
        )
        self.queue_holding = r(
            f"SELECT COUNT(*) FROM harvest_tasks WHERE queue = ? AND {_HOLDING}"
        )
        # What `queues()` reports: slots held and waits, by queue.
        self.run_counts = (
            "SELECT w.queue, SUM(CASE WHEN w.admitted_at IS NOT NULL AND "
            "e.state = 'RUNNING' THEN 1 ELSE 0 END), SUM(CASE WHEN w.admitted_at "
            "IS NULL AND e.state = 'ENQUEUED' THEN 1 ELSE 0 END), MIN(CASE WHEN "
            "w.admitted_at IS NULL AND e.state = 'ENQUEUED' THEN w.enqueued_at END) "
            "FROM harvest_flow_waits w JOIN harvest_executions e ON "
            "e.exec_id = w.exec_id GROUP BY w.queue"
        )
        self.task_counts = (
            "SELECT activity_name, queue, SUM(CASE WHEN status = 'WAITING' THEN 0 "
            "ELSE 1 END), SUM(CASE WHEN status = 'WAITING' THEN 1 ELSE 0 END), "
            "MIN(CASE WHEN status = 'WAITING' THEN ready_at END) FROM harvest_tasks "
            "GROUP BY activity_name, queue"
        )


SQLITE_FLOW = FlowSql(SQLITE)
POSTGRES_FLOW = FlowSql(POSTGRES)


def flow_sql(dialect: Dialect) -> FlowSql:
    """The statements of `dialect`."""
    return POSTGRES_FLOW if dialect.name == POSTGRES.name else SQLITE_FLOW


class FlowTables:
    """The flow-control reads and writes of one open write transaction."""

    def __init__(self, sql: FlowSql, conn: Executes, worker_id: str) -> None:
        self._sql = sql
        self._conn = conn
        self.worker_id = worker_id

    # -- queues -------------------------------------------------------------

    def put_queue(
        self,
        name: str,
        *,
        concurrency: int | None = None,
        worker_concurrency: int | None = None,
        rate: tuple[int, float] | None = None,
        partition_concurrency: int | None = None,
        priority: bool = False,
        quota: tuple[int, float] | None = None,
        now: datetime,
    ) -> None:
        """Insert or change a queue's limits; its rate state is kept."""
        self._conn.execute(
            self._sql.put_queue,
            (
                name,
                concurrency,
                worker_concurrency,
                None if rate is None else rate[0],
                None if rate is None else rate[1],
                partition_concurrency,
                int(priority),
                None if quota is None else quota[0],
                None if quota is None else quota[1],
                micros(now),
            ),
        )

    def queue(self, name: str, *, lock: bool = False) -> QueueRow | None:
        """A queue's row; with `lock`, held until the transaction ends (Postgres)."""
        sql = self._sql.lock_queue if lock else self._sql.queue
        row = self._conn.execute(sql, (name,)).fetchone()
        return None if row is None else QueueRow.from_row(row)

    def set_next_token(self, name: str, at_us: int) -> None:
        """When the queue's next rate token is due."""
        self._conn.execute(self._sql.set_token, (at_us, name))

    def set_quota(self, name: str, start_us: int, used: int) -> None:
        """The quota window's start and the starts counted in it."""
        self._conn.execute(self._sql.set_quota, (start_us, used, name))

    # -- runs -----------------------------------------------------------------

    def enqueue(
        self,
        exec_id: str,
        queue: str,
        *,
        workflow_queue: str | None,
        priority: int,
        partition_key: str | None,
        dedup_id: str | None,
        now: datetime,
        due_at: datetime,
    ) -> None:
        """A run's wait in `queue`."""
        self._conn.execute(
            self._sql.enqueue,
            (
                exec_id,
                queue,
                workflow_queue,
                priority,
                partition_key,
                dedup_id,
                micros(now),
                micros(due_at),
            ),
        )

    def dedup_holder(self, queue: str, dedup_id: str) -> tuple[str, str] | None:
        """The (exec_id, state) of the ENQUEUED or RUNNING run holding the dedup id."""
        rows = self._conn.execute(self._sql.dedup_holder, (queue, dedup_id)).fetchall()
        for exec_id, state in rows:
            if state in ("ENQUEUED", "RUNNING"):
                return str(exec_id), str(state)
        return None

    def release_ended(self, queue: str) -> None:
        """Drop the admitted rows of the queue's runs that ended (their slots are free)."""
        self._conn.execute(self._sql.release_ended, (queue,))
        self._conn.execute(self._sql.release_ended_also, (queue,))

    def drop_waiting_ended(self, queue: str) -> None:
        """Drop the waiting rows of runs that ended while ENQUEUED (a sweep, now and then)."""
        self._conn.execute(self._sql.drop_waiting_ended, (queue,))

    def drop_wait(self, exec_id: str) -> None:
        """Drop a run's queue row (it ended while it waited)."""
        self._conn.execute(self._sql.drop_wait, (exec_id,))

    def wait_of(self, exec_id: str) -> WaitRow | None:
        """The run's queue row, waiting or admitted (None: it is in no queue)."""
        row = self._conn.execute(self._sql.wait_of, (exec_id,)).fetchone()
        return None if row is None else wait_from_row(row)

    def running(self, queue: str) -> int:
        """Runs holding a slot of `queue` (also as their workflow's own queue)."""
        row = self._conn.execute(self._sql.running, (queue, queue)).fetchone()
        return int(row[0])

    def running_here(self, queue: str) -> int:
        """Runs of `queue` this worker admitted that still hold their slot."""
        args = (queue, self.worker_id)
        return int(self._conn.execute(self._sql.running_by, args).fetchone()[0])

    def running_partitions(self, queue: str) -> dict[str | None, int]:
        """Slots held in `queue`, by partition key."""
        rows = self._conn.execute(self._sql.running_partitions, (queue,)).fetchall()
        return {key: int(count) for key, count in rows}

    def candidates(self, queue: str, now: datetime, limit: int) -> list[WaitRow]:
        """Waiting runs of `queue` due by `now`, by priority then arrival."""
        rows = self._conn.execute(
            self._sql.candidates, (queue, micros(now), limit)
        ).fetchall()
        return [wait_from_row(row) for row in rows]

    def admit(self, exec_id: str, now: datetime) -> bool:
        """Mark the run's wait admitted by this worker; False when it was not waiting."""
        args = (micros(now), self.worker_id, exec_id)
        cursor = self._sql.dialect.settled(self._conn, self._sql.admit, args)
        return bool(cursor.rowcount == 1)

    def hold_task(self, task_id: int) -> None:
        """Make an activity task wait for a slot (status WAITING)."""
        self._conn.execute(self._sql.hold_task, (task_id,))

    def open_task(self, task_id: int) -> bool:
        """Give a waiting task its slot (PENDING: the next claim takes it)."""
        cursor = self._sql.dialect.settled(self._conn, self._sql.open_task, (task_id,))
        return bool(cursor.rowcount == 1)

    def activity_holding(self, activity_name: str) -> int:
        """Live (admitted) tasks of the activity: the slots it holds."""
        row = self._conn.execute(self._sql.activity_holding, (activity_name,))
        return int(row.fetchone()[0])

    def queue_holding(self, queue: str) -> int:
        """Live (admitted) tasks of the named queue."""
        return int(self._conn.execute(self._sql.queue_holding, (queue,)).fetchone()[0])
