"""Flow-control statements, written once and rendered per dialect at import.

`FlowTables` (a write transaction's) and `FlowReads` (a reader's) run them.
"""

from __future__ import annotations

from harvest_engine.store.sql.dialect import POSTGRES, SQLITE, Dialect
from harvest_engine.store.sql.flow_rows import QUEUE_COLUMNS, WAIT_COLUMNS

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
        # The slot-freeing transaction's try: a queue another worker is
        # admitting into is left to it (never waited for while holding runs).
        self.try_lock_queue = self.queue + dialect.skip_locked
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
        # The same, sent right behind `try_lock_queue` before its answer is
        # read: they delete only while this transaction holds the queue's row
        # (the guard takes it, or finds it held by another and skips).
        held = (
            " AND EXISTS (SELECT 1 FROM harvest_flow_queues WHERE name = ?"
            + dialect.skip_locked
            + ")"
        )
        self.try_release_ended = r(
            "DELETE FROM harvest_flow_waits WHERE queue = ? AND admitted_at IS NOT NULL"
            + ended
            + held
        )
        self.try_release_ended_also = r(
            "DELETE FROM harvest_flow_waits WHERE workflow_queue = ? "
            "AND admitted_at IS NOT NULL" + ended + held
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
        # scan every waiting run's row per candidate. Each candidate's run
        # state is read after the LIMIT (a derived table with a LIMIT is never
        # flattened): one primary-key seek per candidate; the caller passes
        # over a run that ended while it waited.
        # The (queue, admitted_at, priority, id) index hands them over in
        # order, so the LIMIT stops the walk; SQLite chose the due index and
        # sorted every waiting run (3.5 ms per admission at 1,000 waiting).
        in_order = dialect.indexed_by.format(index="harvest_flow_waits_queue")
        self.candidates = r(
            "SELECT w.*, (SELECT e.state FROM harvest_executions e WHERE "
            f"e.exec_id = w.exec_id) FROM (SELECT {WAIT_COLUMNS} FROM "
            f"harvest_flow_waits{in_order} WHERE queue = ? AND admitted_at IS NULL "
            "AND due_at <= ? ORDER BY priority, id LIMIT ?) w ORDER BY priority, id"
        )
        # An admission's picks, locked before they are flipped RUNNING, in
        # one statement, in exec_id order (as every batch lock takes runs): a
        # run a cancel ended meanwhile is not returned (the lock re-reads the
        # row). `{ids}`: `Dialect.in_list`'s text.
        in_order = ' COLLATE "C"' if dialect.name == "postgres" else ""
        lock_runs = (
            "SELECT exec_id, workflow_name, deadline FROM harvest_executions "
            f"WHERE exec_id {{ids}} AND state = 'ENQUEUED' ORDER BY exec_id{in_order}"
        )
        self.lock_enqueued = r(lock_runs + dialect.for_update)
        self.try_lock_enqueued = r(lock_runs + dialect.skip_locked)
        self.drop_wait = r("DELETE FROM harvest_flow_waits WHERE exec_id = ?")
        self.admit = r(
            "UPDATE harvest_flow_waits SET admitted_at = ?, admitted_by = ? "
            "WHERE exec_id {ids} AND admitted_at IS NULL"
        )
        self.wait_of = r(
            f"SELECT {WAIT_COLUMNS} FROM harvest_flow_waits WHERE exec_id = ?"
        )
        self.ahead = r(
            "SELECT COUNT(*) FROM harvest_flow_waits WHERE queue = ? AND "
            "admitted_at IS NULL AND (priority < ? OR (priority = ? AND id < ?))"
        )
        # What waits, in one read: each queue with its earliest due waiting
        # run ('q': one index seek per queue, harvest_flow_waits_due, not a
        # scan of the waits), then the activity attempts waiting for a slot
        # ('t'), oldest first.
        self.waiting = (
            "SELECT 'q', name, (SELECT MIN(w.due_at) FROM harvest_flow_waits w "
            "WHERE w.queue = q.name AND w.admitted_at IS NULL), NULL, NULL "
            "FROM harvest_flow_queues q UNION ALL SELECT 't', activity_name, "
            "ready_at, id, queue FROM harvest_tasks WHERE status = 'WAITING' "
            "ORDER BY 1, 3, 4"
        )
        self.hold_task = r("UPDATE harvest_tasks SET status = 'WAITING' WHERE id = ?")
        self.open_task = r(
            "UPDATE harvest_tasks SET status = 'PENDING' WHERE id = ? AND status = 'WAITING'"
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
