"""Flow-control reads, written once: queues with their slots and waits, where a run waits.

A store lends them on its read connection (`DurableStore.flow_reads`), a
reader on its own (`flow_reads()` of SqliteReader / PostgresReader), so
`rt.queues()`, `client.queues()` and `harvest queues` read alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.flow import QUEUE_ACTIVITY_PREFIX, QueueInfo, Rate
from harvest_engine.store.sql.columns import opt_time
from harvest_engine.store.sql.flow_rows import (
    QueueRow,
    WaitingTask,
    WaitRow,
    wait_from_row,
)
from harvest_engine.timestamps import from_micros

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.store.sql.executes import Executes
    from harvest_engine.store.sql.flow_sql import FlowSql


class FlowReads:
    """The flow-control reads of a store or a reader, on the connection it lends."""

    def __init__(self, sql: FlowSql, conn: Executes) -> None:
        self._sql = sql
        self._conn = conn

    def queue_rows(self) -> list[QueueRow]:
        """Every queue's row, by name."""
        rows = self._conn.execute(self._sql.all_queues).fetchall()
        return [QueueRow.from_row(row) for row in rows]

    def waiting(self) -> tuple[list[tuple[str, datetime]], list[WaitingTask]]:
        """What waits, in one read: queues with waiting runs, and attempts waiting for a slot.

        Each queue comes with its earliest due time; the attempts oldest first.
        """
        queues: list[tuple[str, datetime]] = []
        tasks: list[WaitingTask] = []
        for kind, name, at, task_id, queue in self._conn.execute(
            self._sql.waiting
        ).fetchall():
            if kind == "t":
                tasks.append(
                    WaitingTask(
                        int(task_id), str(name), str(queue), from_micros(int(at))
                    )
                )
            elif at is not None:
                queues.append((str(name), from_micros(int(at))))
        return queues, tasks

    def run_counts(self) -> dict[str, tuple[int, int, datetime | None]]:
        """(running, waiting, oldest wait) of runs, by queue."""
        rows = self._conn.execute(self._sql.run_counts).fetchall()
        return {
            str(name): (int(running or 0), int(waiting or 0), opt_time(oldest))
            for name, running, waiting, oldest in rows
        }

    def task_counts(self) -> list[tuple[str, str, int, int, datetime | None]]:
        """(activity, queue, holding, waiting, oldest wait) of live tasks."""
        rows = self._conn.execute(self._sql.task_counts).fetchall()
        return [
            (str(a), str(q), int(h or 0), int(w or 0), opt_time(o))
            for a, q, h, w, o in rows
        ]

    def wait_of(self, exec_id: str) -> WaitRow | None:
        """The run's queue row (waiting or admitted), if it was started into a queue."""
        row = self._conn.execute(self._sql.wait_of, (exec_id,)).fetchone()
        return None if row is None else wait_from_row(row)

    def ahead_of(self, wait: WaitRow) -> int:
        """How many waiting runs of the queue come before `wait`."""
        args = (wait.queue, wait.priority, wait.priority, wait.order)
        return int(self._conn.execute(self._sql.ahead, args).fetchone()[0])

    def queue_infos(self) -> list[QueueInfo]:
        """Every queue with its limits, the slots held, the waits and the oldest wait.

        A run holds a slot of its queue while RUNNING; an activity attempt
        while its task is live (PENDING or RUNNING after admission). The
        tasks of an activity with its own queue count there, not in the
        named queue of its `queue=`.
        """
        rows = self.queue_rows()
        runs = self.run_counts()
        tasks = self.task_counts()
        own = {r.name[len(QUEUE_ACTIVITY_PREFIX) :] for r in rows if _is_activity(r)}
        infos = []
        for row in rows:
            running, waiting, oldest = runs.get(row.name, (0, 0, None))
            for activity, queue, holding, waits, first in tasks:
                if _is_activity(row):
                    mine = activity == row.name[len(QUEUE_ACTIVITY_PREFIX) :]
                else:
                    mine = queue == row.name and activity not in own
                if mine:
                    running += holding
                    waiting += waits
                    if first is not None and (oldest is None or first < oldest):
                        oldest = first
            infos.append(
                QueueInfo(
                    name=row.name,
                    concurrency=row.concurrency,
                    worker_concurrency=row.worker_concurrency,
                    rate=None
                    if row.rate_limit is None or row.rate_per is None
                    else Rate(row.rate_limit, row.rate_per),
                    partition_concurrency=row.partition_concurrency,
                    priority=row.priority,
                    running=running,
                    waiting=waiting,
                    oldest_wait=oldest,
                )
            )
        return infos


def _is_activity(row: QueueRow) -> bool:
    return row.name.startswith(QUEUE_ACTIVITY_PREFIX)
