"""Activity attempts waiting for a slot: opened in order, or timed out SCHEDULE_TO_START.

An attempt of an activity with limits (its own `max_concurrent` /
`rate_limit`, or a registered queue its `queue=` names) is scheduled as
a task in status WAITING. Its gate's transaction locks the queue row,
counts the live (PENDING or RUNNING) tasks holding slots, and opens the
oldest waiting ones as far as the limits allow; the next claim takes
them. A slot is the task row itself, so it comes back when the task ends
or its worker's lease expires (Postgres) or the file is reopened (SQLite).
An attempt that waited past its `schedule_to_start` is recorded TIMED_OUT
and follows the retry policy (`on_timeout`, given by the serving wing).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from harvest_engine.activity import AttemptResult
from harvest_engine.runtime.flow.admission import Limiter
from harvest_engine.states import ErrorInfo

if TYPE_CHECKING:
    from harvest_engine.runtime.registry import RegisteredActivity, Registry
    from harvest_engine.store.sql.flow_rows import WaitingTask
    from harvest_engine.store.txn_protocol import WriteTxn

TimeOut = Callable[["WriteTxn", int, datetime], None]
"""Records a waiting task's attempt TIMED_OUT (SCHEDULE_TO_START) in the transaction."""


def gate_of(
    registry: Registry, task: WaitingTask
) -> tuple[str, RegisteredActivity] | None:
    """The queue a waiting task waits in, with its activity (None: not this process's)."""
    activity = registry.activities.get(task.activity_name)
    if activity is None:
        return None
    gate = registry.gate(activity)
    return None if gate is None else (gate, activity)


def expires_at(activity: RegisteredActivity, task: WaitingTask) -> datetime | None:
    """When the waiting attempt times out SCHEDULE_TO_START (None: never)."""
    limits = activity.limits
    if limits is None or limits.schedule_to_start is None:
        return None
    return task.ready_at + timedelta(seconds=limits.schedule_to_start)


def open_gate(
    txn: WriteTxn,
    gate: str,
    waiting: list[tuple[WaitingTask, RegisteredActivity]],
    now: datetime,
    on_timeout: TimeOut,
) -> tuple[int, str | None, datetime | None]:
    """Time out and open the gate's waiting tasks; (how many moved, what holds the rest, token).

    `waiting` is oldest first. An activity with its own queue counts its own
    live tasks; a named queue counts the live tasks of its queue.
    """
    tables = txn.flow()
    row = tables.queue(gate, lock=True)
    moved = 0
    ready = []
    for task, activity in waiting:
        expiry = expires_at(activity, task)
        if expiry is not None and expiry <= now:
            on_timeout(txn, task.id, now)
            moved += 1
        elif task.ready_at <= now:
            ready.append((task, activity))
    if row is None:
        # A named queue registered here but not stored yet: nothing to count.
        return moved, None, None
    limiter = Limiter.for_tasks(tables, row, now)
    if ready:
        own = ready[0][1].own_queue == gate
        holding = (
            tables.activity_holding(ready[0][1].name)
            if own
            else tables.queue_holding(gate)
        )
        if row.concurrency is not None:
            limiter.free = row.concurrency - holding
    held = limiter.held_by()
    for task, _ in ready:
        held = limiter.held_by()
        if held is not None:
            break
        if tables.open_task(task.id):
            limiter.take()
            moved += 1
    limiter.save()
    if held is None:
        held = limiter.held_by()
    return moved, held, limiter.next_token


def waited_too_long(
    activity_name: str, ready_at: datetime, limit: float | None, now: datetime
) -> AttemptResult:
    """The outcome of an attempt that waited for a slot past its schedule_to_start."""
    waited = (now - ready_at).total_seconds()
    return AttemptResult(
        ok=False,
        timed_out=True,
        error=ErrorInfo(
            type="ScheduleToStartTimeout",
            message=f"activity {activity_name} waited {waited:.3g}s for a "
            f"slot, past its schedule_to_start of {limit or 0:g}s",
            details={"timeout_type": "SCHEDULE_TO_START"},
        ),
    )
