"""Flow-control SQL, written once: queues, the runs waiting in them, and waiting activity attempts.

`FlowTables` is what a write transaction lends the runtime's admission
(`WriteTxn.flow()`): every call runs on the transaction's connection, so
a slot counted, a token taken and a run or attempt admitted commit together.
On Postgres `lock_queue` takes the queue's row FOR UPDATE first, so two
workers admitting into one queue take turns instead of both counting the
same free slot (never check-then-act); SQLite's one writer holds the file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harvest_engine.store.sql.flow_rows import (
    LockedRun,
    QueueRow,
    WaitRow,
    wait_from_row,
)
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.store.sql.executes import Executes
    from harvest_engine.store.sql.flow_sql import FlowSql


@dataclass(frozen=True)
class _Counted:
    """A queue's slots held and waiting candidates, read under its row's lock."""

    running: int
    here: int
    partitions: dict[str | None, int]
    candidates: list[WaitRow]


ReadBehind = Callable[[Sequence[str]], Callable[[set[str]], None]]
"""Send reads of runs behind their lock; the returned call keeps those the lock took."""


class FlowTables:
    """The flow-control reads and writes of one open write transaction."""

    def __init__(
        self,
        sql: FlowSql,
        conn: Executes,
        worker_id: str,
        read_behind: ReadBehind | None = None,
    ) -> None:
        self._sql = sql
        self._conn = conn
        self.worker_id = worker_id
        # A pipelined store's reads of the runs `lock_enqueued` locks, sent
        # behind the lock (their decisions then read nothing); None elsewhere.
        self._read_behind = read_behind
        # What `open_admission` read, by queue, for the admission that follows.
        self._counted: dict[str, _Counted] = {}

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

    def queue(
        self, name: str, *, lock: bool = False, wait: bool = True
    ) -> QueueRow | None:
        """A queue's row; with `lock`, held until the transaction ends (Postgres).

        A lock without `wait` reads None when another worker holds the row.
        """
        sql = self._sql.queue
        if lock:
            sql = self._sql.lock_queue if wait else self._sql.try_lock_queue
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
        if queue in self._counted:
            return  # done by `open_admission`
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

    def open_admission(
        self, queue: str, now: datetime, limit: int, *, wait: bool = True
    ) -> QueueRow | None:
        """Lock the queue's row, then read its slots and `limit` candidates: one round trip.

        The reads travel behind the lock (a pipelined store runs them in
        order, after the lock is granted) and are kept for this admission's
        `running`, `running_here`, `running_partitions` and `candidates`.
        Without `wait`, a queue another worker holds is passed over (None):
        this transaction waits for nobody, and what it sent behind the lock
        changes nothing then (the releases check that the lock is held).
        """
        sql, conn = self._sql, self._conn
        self._counted.pop(queue, None)
        if wait:
            lock = conn.execute(sql.lock_queue, (queue,))
            conn.execute(sql.release_ended, (queue,))
            conn.execute(sql.release_ended_also, (queue,))
        else:
            lock = conn.execute(sql.try_lock_queue, (queue,))
            conn.execute(sql.try_release_ended, (queue, queue))
            conn.execute(sql.try_release_ended_also, (queue, queue))
        running = conn.execute(sql.running, (queue, queue))
        here = conn.execute(sql.running_by, (queue, self.worker_id))
        parts = conn.execute(sql.running_partitions, (queue,))
        waits = conn.execute(sql.candidates, (queue, micros(now), limit))
        row = lock.fetchone()
        if row is None:
            for unread in (running, here, parts, waits):
                unread.fetchall()
            return None
        self._counted[queue] = _Counted(
            int(running.fetchone()[0]),
            int(here.fetchone()[0]),
            {key: int(count) for key, count in parts.fetchall()},
            [wait_from_row(w) for w in waits.fetchall()],
        )
        return None if row is None else QueueRow.from_row(row)

    def running(self, queue: str) -> int:
        """Runs holding a slot of `queue` (also as their workflow's own queue)."""
        counted = self._counted.get(queue)
        if counted is not None:
            return counted.running
        row = self._conn.execute(self._sql.running, (queue, queue)).fetchone()
        return int(row[0])

    def running_here(self, queue: str) -> int:
        """Runs of `queue` this worker admitted that still hold their slot."""
        counted = self._counted.get(queue)
        if counted is not None:
            return counted.here
        args = (queue, self.worker_id)
        return int(self._conn.execute(self._sql.running_by, args).fetchone()[0])

    def running_partitions(self, queue: str) -> dict[str | None, int]:
        """Slots held in `queue`, by partition key."""
        counted = self._counted.get(queue)
        if counted is not None:
            return dict(counted.partitions)
        rows = self._conn.execute(self._sql.running_partitions, (queue,)).fetchall()
        return {key: int(count) for key, count in rows}

    def candidates(self, queue: str, now: datetime, limit: int) -> list[WaitRow]:
        """Waiting runs of `queue` due by `now`, by priority then arrival, with their run's state."""
        counted = self._counted.get(queue)
        if counted is not None:
            return counted.candidates
        rows = self._conn.execute(
            self._sql.candidates, (queue, micros(now), limit)
        ).fetchall()
        return [wait_from_row(row) for row in rows]

    def lock_enqueued(
        self, exec_ids: list[str], *, wait: bool = True
    ) -> dict[str, LockedRun]:
        """Lock the runs still ENQUEUED among `exec_ids`: their names and deadlines, by exec_id.

        One statement, locking in exec_id order (as every batch lock takes
        runs). Without `wait`, a run another transaction holds is left out,
        as is a run that is no longer ENQUEUED.
        """
        if not exec_ids:
            return {}
        sql = self._sql.lock_enqueued if wait else self._sql.try_lock_enqueued
        ids, args = self._sql.dialect.in_list(sorted(exec_ids))
        locked = self._conn.execute(sql.format(ids=ids), args)
        keep = None if self._read_behind is None else self._read_behind(exec_ids)
        found = {}
        for row in locked.fetchall():
            deadline = None if row[2] is None else from_micros(int(row[2]))
            found[str(row[0])] = LockedRun(str(row[1]), deadline)
        if keep is not None:
            keep(set(found))
        return found

    def admit(self, exec_ids: list[str], now: datetime) -> None:
        """Mark the runs' waits admitted by this worker (their runs are locked: they wait)."""
        if not exec_ids:
            return
        ids, args = self._sql.dialect.in_list(exec_ids)
        self._conn.execute(
            self._sql.admit.format(ids=ids), (micros(now), self.worker_id, *args)
        )

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
