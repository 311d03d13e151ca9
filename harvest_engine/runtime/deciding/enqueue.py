"""Starting into a queue: the quota, the dedup id, and a new run that waits ENQUEUED.

Runs in the start's own write transaction, after the run's row and its
WorkflowStarted event are written: a refusal (`QuotaExceeded`,
`DuplicateEnqueue`, `UnknownQueue`, `InvalidFlowOption`) raises there and
the whole start rolls back, so nothing is written. A child start checks
first (`check`), in its parent's decision, and records a refusal instead.

It sits with the decision cycle (not in runtime/flow/, which admits) because
a decision enqueues too: a child started into a queue, and the successor of
a run that continues as new (`enqueue_successor`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from harvest_engine.errors import (
    DuplicateEnqueue,
    InvalidFlowOption,
    QuotaExceeded,
    UnknownQueue,
)
from harvest_engine.flow import QUEUE_WORKFLOW_PREFIX
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.calls import FlowStart
    from harvest_engine.runtime.registry import Registry
    from harvest_engine.store.rows import NewExecution
    from harvest_engine.store.txn_protocol import WriteTxn


def queue_of(registry: Registry, name: str, flow: FlowStart | None) -> str | None:
    """The queue a start of workflow `name` waits in (None: it runs at once).

    Raises:
        InvalidFlowOption: queue options (priority, partition, dedup id,
            delay) without a queue to wait in.
    """
    if flow is not None and flow.queue is not None:
        return flow.queue
    own = registry.workflow_queue(name)
    if own is None and flow is not None:
        raise InvalidFlowOption(
            option="StartOptions",
            why="priority, partition_key, dedup_id and start_delay need a queue=",
        )
    return own


def check_quota(registry: Registry, txn: WriteTxn, name: str, now: datetime) -> None:
    """Count one start against the workflow's quota; QuotaExceeded when it is used up.

    The quota is a window of `per` from its first start: `limit` starts in
    it, then refusals until it ends (the queue row is locked meanwhile).
    """
    limits = registry.workflow_limits.get(name)
    if limits is None or limits.quota is None:
        return
    quota, key = limits.quota, QUEUE_WORKFLOW_PREFIX + name
    flow = txn.flow()
    row = flow.queue(key, lock=True)
    if row is None:  # registered before its row was written: nothing counted yet
        return
    at, per = micros(now), round(quota.period.total_seconds() * 1_000_000)
    start, used = row.quota_start, row.quota_used
    if at >= start + per:
        start, used = at, 0
    if used >= quota.limit:
        raise QuotaExceeded(
            workflow_name=name,
            limit=quota.limit,
            per_seconds=quota.period.total_seconds(),
            retry_after=from_micros(start + per).isoformat(),
        )
    flow.set_quota(key, start, used + 1)


def check(
    txn: WriteTxn,
    queue: str,
    flow: FlowStart | None,
    registry: Registry | None = None,
) -> None:
    """Refuse a start into `queue` before anything is written.

    A plain start (no priority, no dedup id) into a queue this process
    registered (`registry`) reads nothing: its row was committed before
    `register_queue` returned and queue rows are never deleted, so the read
    could only find it (on Postgres it was a round trip of every enqueue).

    Raises:
        UnknownQueue: no queue of that name is stored.
        InvalidFlowOption: a priority on a queue made without ``priority=True``.
        DuplicateEnqueue: the dedup id's run is still ENQUEUED or RUNNING.
    """
    priority = 0 if flow is None else flow.priority
    dedup_id = None if flow is None else flow.dedup_id
    plain = not priority and dedup_id is None
    if plain and registry is not None and queue in registry.queues:
        return
    tables = txn.flow()
    row = tables.queue(queue)
    if row is None:
        raise UnknownQueue(queue=queue)
    if priority and not row.priority:
        raise InvalidFlowOption(
            option="StartOptions.priority",
            why=f"queue {queue!r} was registered without priority=True",
        )
    if dedup_id is not None:
        holder = tables.dedup_holder(queue, dedup_id)
        if holder is not None:
            raise DuplicateEnqueue(
                queue=queue, dedup_id=dedup_id, exec_id=holder[0], state=holder[1]
            )


def enqueue(
    registry: Registry,
    txn: WriteTxn,
    new: NewExecution,
    queue: str,
    flow: FlowStart | None,
    now: datetime,
    *,
    keep_deadline: bool = False,
) -> None:
    """Make the just-inserted run wait ENQUEUED in `queue`.

    Its deadline counts from its admission (`admission._deadline`): it
    is cleared here, or with `keep_deadline` (a child's own
    execution_timeout) moved on by the time the run waited.

    Raises:
        UnknownQueue, InvalidFlowOption, DuplicateEnqueue: as `check`.
    """
    check(txn, queue, flow, registry)
    tables = txn.flow()
    own = registry.workflow_queue(new.workflow_name)
    delay = 0.0 if flow is None else flow.delay_seconds
    dedup_id = None if flow is None else flow.dedup_id
    fields: dict[str, object] = {"state": "ENQUEUED", "needs_decision": 0}
    if not keep_deadline:
        fields["deadline"] = None
    txn.update_execution(new.exec_id, **fields)
    tables.enqueue(
        new.exec_id,
        queue,
        workflow_queue=own if own != queue else None,
        priority=0 if flow is None else flow.priority,
        partition_key=None if flow is None else flow.partition_key,
        dedup_id=dedup_id,
        now=now,
        due_at=now + timedelta(seconds=delay),
    )


def enqueue_successor(
    registry: Registry,
    txn: WriteTxn,
    predecessor: str,
    new: NewExecution,
    now: datetime,
    due_at: datetime | None = None,
) -> bool:
    """Put a continue-as-new (or retry) successor back in its predecessor's queue; whether it waits.

    A successor is admitted like a fresh start, so a chain never holds two
    slots nor skips its limit: the predecessor's slot is freed (its row
    dropped) and the successor waits ENQUEUED behind the runs already
    waiting, with the predecessor's queue, priority, partition key and dedup
    id (the id stays taken by the chain), no start delay and no quota count
    (it is not a new start). A retry waits out its backoff (`due_at`)
    ENQUEUED, holding no slot. A run in no queue whose workflow now declares
    `concurrency` or `throttle` enters its workflow's own queue.
    """
    tables = txn.flow()
    wait = tables.wait_of(predecessor)
    if wait is not None:
        tables.drop_wait(predecessor)
        queue: str | None = wait.queue
    else:
        queue = registry.workflow_queue(new.workflow_name)
    if queue is None or tables.queue(queue) is None:
        return False
    own = registry.workflow_queue(new.workflow_name)
    txn.update_execution(new.exec_id, state="ENQUEUED", needs_decision=0, deadline=None)
    tables.enqueue(
        new.exec_id,
        queue,
        workflow_queue=own if own != queue else None,
        priority=0 if wait is None else wait.priority,
        partition_key=None if wait is None else wait.partition_key,
        dedup_id=None if wait is None else wait.dedup_id,
        now=now,
        due_at=now if due_at is None else due_at,
    )
    return True
