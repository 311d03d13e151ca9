"""Declaring queues: `register_queue`, a workflow's or activity's own limits, and `queues()`.

A queue's limits are stored (`harvest_flow_queues`), so a client, the CLI
and every Postgres worker read the same ones; registering again with other
limits changes them for the next admission, runs already waiting included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors import InvalidFlowOption
from harvest_engine.flow import QUEUE_ACTIVITY_PREFIX, QUEUE_WORKFLOW_PREFIX, Queue

if TYPE_CHECKING:
    from harvest_engine.flow import QueueInfo, Rate
    from harvest_engine.runtime.engine import Engine
    from harvest_engine.runtime.registry import RegisteredActivity


def _rate(rate: Rate | None) -> tuple[int, float] | None:
    return None if rate is None else (rate.limit, rate.period.total_seconds())


def register_queue(engine: Engine, queue: Queue) -> None:
    """Store the queue's limits (insert or change) and remember it in this process.

    Raises:
        TypeError: `queue` is not a Queue.
        InvalidFlowOption: a name taken by the implicit queues' prefixes.
    """
    if not isinstance(queue, Queue):
        raise TypeError(f"register_queue needs a Queue, got {queue!r}")
    if queue.name.startswith((QUEUE_WORKFLOW_PREFIX, QUEUE_ACTIVITY_PREFIX)):
        raise InvalidFlowOption(
            option="Queue.name",
            why=f"{queue.name!r}: the prefixes 'workflow:' and 'activity:' name "
            "the queues of a workflow's or an activity's own limits",
        )
    with engine.store.write() as txn:
        txn.flow().put_queue(
            queue.name,
            concurrency=queue.concurrency,
            worker_concurrency=queue.worker_concurrency,
            rate=_rate(queue.rate),
            partition_concurrency=queue.partition_concurrency,
            priority=queue.priority,
            now=engine.clock.now(),
        )
    engine.registry.add_queue(queue)
    engine.waker.wake()  # waiting runs may fit the new limits


def store_workflow_limits(engine: Engine, name: str) -> None:
    """Store the registered workflow's own limits as its queue "workflow:NAME"."""
    limits = engine.registry.workflow_limits.get(name)
    if limits is None:
        return
    with engine.store.write() as txn:
        txn.flow().put_queue(
            QUEUE_WORKFLOW_PREFIX + name,
            concurrency=limits.concurrency,
            rate=_rate(limits.throttle),
            quota=_rate(limits.quota),
            now=engine.clock.now(),
        )


def store_activity_limits(engine: Engine, activity: RegisteredActivity) -> None:
    """Store the registered activity's own limits as its queue "activity:NAME"."""
    limits, own = activity.limits, activity.own_queue
    if limits is None or own is None:
        return
    with engine.store.write() as txn:
        txn.flow().put_queue(
            own,
            concurrency=limits.max_concurrent,
            rate=_rate(limits.rate_limit),
            now=engine.clock.now(),
        )


def queues(engine: Engine) -> list[QueueInfo]:
    """Every stored queue with its limits, slots held, waits and oldest wait."""
    with engine.store.flow_reads() as reads:
        return reads.queue_infos()
