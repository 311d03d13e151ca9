"""Task leases on Postgres: the claim as compare-and-swap, renewal on a timer, and reclaiming.

A claimed task carries its worker's id and a lease expiry in the database
server's clock (workers on several machines agree on it). While a body runs,
its worker renews every lease it holds on a timer (and on each heartbeat), so
only a dead or cut-off worker's leases expire. Any live worker then takes an
expired task by the same compare-and-swap as a pending one, records the lost
attempt, and runs the body again with the same idempotency key
 (at-least-once).
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

from harvest_engine import payloads
from harvest_engine.store.postgres.arrays import Ints
from harvest_engine.store.rows import AttemptRecord
from harvest_engine.store.sql import columns
from harvest_engine.store.sql.wakeups import NOT_PAUSED_TASK
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    import psycopg

    from harvest_engine.store.rows import TaskRecord
    from harvest_engine.store.sql.executes import Executes

log = logging.getLogger("harvest_engine.postgres")

# A task whose activity declares heartbeat_timeout holds its lease that long
# from its claim or its last heartbeat, and the timer does not renew it: an
# attempt that stops heartbeating is retaken though its worker lives.
LEASE_OF_TASK = "COALESCE(make_interval(secs => heartbeat_timeout), %s::interval)"

DUE_SOURCE = (
    "SELECT MIN(%(now)s + (EXTRACT(EPOCH FROM (lease_expires_at - clock_timestamp()))"
    " * 1000000)::bigint) FROM harvest_tasks WHERE status = 'RUNNING'"
)
"""A dead worker's task comes due when its lease expires (a wakeup source)."""


class ClaimingTxn(Protocol):
    """What a claim needs of the write transaction it runs in (PostgresWriteTxn's)."""

    def task(self, task_id: int) -> TaskRecord | None:
        """A task row by id."""
        ...

    def record_attempt(self, attempt: AttemptRecord) -> None:
        """Record one finished (here: lost) attempt."""
        ...


DEFAULT_LEASE = timedelta(seconds=30)
"""How long a claim lasts without renewal; a dead worker's task is retaken after it."""

RENEWALS_PER_LEASE = 3
"""A live worker renews its leases this many times per lease length."""


def claim(
    txn: ClaimingTxn,
    conn: psycopg.Connection[tuple[Any, ...]],
    task_id: int,
    now: datetime,
    worker_id: str,
    lease: timedelta,
) -> TaskRecord | None:
    """Take a PENDING task, or a RUNNING one whose lease expired; None if gone or held.

    Nothing overwrites a lease it does not hold: a live lease of another
    worker is `None` here, and the row is read FOR UPDATE before the swap.
    """
    current = txn.task(task_id)
    if current is None:
        return None
    row = conn.execute(
        "SELECT status, worker_id, claimed_at, lease_expires_at < clock_timestamp() "
        "FROM harvest_tasks WHERE id = %s",
        (task_id,),
    ).fetchone()
    if row is None:
        return None
    status, holder, claimed_at, expired = row
    if status == "RUNNING" and not expired:
        return None
    if status not in ("PENDING", "RUNNING"):
        return None
    if status == "RUNNING":
        _record_lost(txn, current, holder, claimed_at, now)
    conn.execute(
        "UPDATE harvest_tasks SET status = 'RUNNING', claimed_at = %s, worker_id = %s, "
        f"lease_expires_at = clock_timestamp() + {LEASE_OF_TASK} WHERE id = %s",
        (micros(now), worker_id, lease, task_id),
    )
    return txn.task(task_id)


def _record_lost(
    txn: ClaimingTxn,
    task: TaskRecord,
    holder: object,
    claimed_at: object,
    now: datetime,
) -> None:
    started = from_micros(claimed_at) if isinstance(claimed_at, int) else now
    txn.record_attempt(
        AttemptRecord(
            exec_id=task.exec_id,
            activity_id=task.activity_id,
            activity_name=task.activity_name,
            attempt=task.attempt,
            started_at=started,
            ended_at=max(now, started),
            outcome="LOST",
            error=payloads.dumps(
                {
                    "type": "LeaseExpired",
                    "message": f"worker {holder} stopped renewing its lease; "
                    "the attempt runs again",
                    "non_retryable": False,
                }
            ),
        )
    )


_READY = (
    f"SELECT {columns.TASK_COLUMNS} FROM harvest_tasks WHERE "
    "((status = 'PENDING' AND ready_at <= %s) OR "
    "(status = 'RUNNING' AND lease_expires_at < clock_timestamp()))" + NOT_PAUSED_TASK
)
_STILL_CLAIMED = (
    "FROM harvest_tasks WHERE id = ANY(%s) AND status = 'RUNNING' AND worker_id = %s"
)
# Both of a pass's reads of its own tasks as one statement: the ready tasks
# (mine false, in their order) and which carried claims are still this
# worker's (mine true: only their ids are read).
_READY_AND_CLAIMED = (
    f"SELECT * FROM ({_READY.replace('SELECT ', 'SELECT false AS mine, ', 1)} "
    f"UNION ALL SELECT true, {columns.TASK_COLUMNS} {_STILL_CLAIMED}) u "
    "ORDER BY mine, ready_at, id"
)


def ready_and_claimed(
    conn: Executes, task_ids: Sequence[int], worker_id: str, now: datetime
) -> tuple[list[TaskRecord], set[int]]:
    """`ready_tasks(conn, None, now)` and `still_claimed(conn, task_ids, worker_id)`, in one read."""
    rows = conn.execute(
        _READY_AND_CLAIMED, (micros(now), Ints(task_ids), worker_id)
    ).fetchall()
    ready = [columns.task_from_row(row[1:]) for row in rows if not row[0]]
    return ready, {int(row[1]) for row in rows if row[0]}


def ready_tasks(conn: Executes, exec_id: str | None, now: datetime) -> list[TaskRecord]:
    """Tasks to claim: PENDING and due, or RUNNING under a lease that expired (a dead worker's)."""
    sql = _READY
    args: tuple[Any, ...] = (micros(now),)
    if exec_id is not None:
        sql += " AND exec_id = %s"
        args += (exec_id,)
    rows = conn.execute(sql + " ORDER BY ready_at, id", args).fetchall()
    return [columns.task_from_row(row) for row in rows]


def expired(conn: Executes) -> list[TaskRecord]:
    """RUNNING tasks whose worker stopped renewing (any live worker may retake them)."""
    rows = conn.execute(
        f"SELECT {columns.TASK_COLUMNS} FROM harvest_tasks WHERE status = 'RUNNING' "
        "AND lease_expires_at < clock_timestamp() ORDER BY id"
    ).fetchall()
    return [columns.task_from_row(row) for row in rows]


def still_claimed(conn: Executes, task_ids: Sequence[int], worker_id: str) -> set[int]:
    """Which of these tasks `worker_id` still holds (RUNNING under its lease)."""
    rows = conn.execute(
        f"SELECT id {_STILL_CLAIMED}", (Ints(task_ids), worker_id)
    ).fetchall()
    return {int(r[0]) for r in rows}


def renew(
    conn: psycopg.Connection[tuple[Any, ...]],
    worker_id: str,
    lease: timedelta,
    task_id: int | None = None,
) -> int:
    """Extend this worker's leases (all, or one task's); how many were renewed."""
    sql = (
        "UPDATE harvest_tasks SET lease_expires_at = clock_timestamp() + %s "
        "WHERE worker_id = %s AND status = 'RUNNING' AND heartbeat_timeout IS NULL"
    )
    args: tuple[object, ...] = (lease, worker_id)
    if task_id is not None:
        sql += " AND id = %s"
        args += (task_id,)
    return conn.execute(sql, args).rowcount


def release_own(conn: psycopg.Connection[tuple[Any, ...]], worker_id: str) -> int:
    """Expire the leases a previous process with this worker id left behind (it is gone)."""
    return conn.execute(
        "UPDATE harvest_tasks SET lease_expires_at = clock_timestamp() "
        "WHERE worker_id = %s AND status = 'RUNNING'",
        (worker_id,),
    ).rowcount


class Renewer:
    """A daemon thread that renews the worker's leases every lease / RENEWALS_PER_LEASE."""

    def __init__(self, renew_all: Callable[[], object], lease: timedelta) -> None:
        self._renew_all = renew_all
        self._interval = lease.total_seconds() / RENEWALS_PER_LEASE
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name="harvest-lease-renewer", daemon=True
        )
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._renew_all()
            except Exception as exc:  # noqa: BLE001 - a failed renewal is retried next tick
                log.warning("lease renewal failed (%s); retrying", exc)

    def stop(self) -> None:
        """Stop renewing (the leases then expire unless the tasks finish)."""
        self._stop.set()
        self._thread.join(timeout=5)
