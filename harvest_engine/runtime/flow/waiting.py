"""Where an ENQUEUED run waits: its queue, how many runs are ahead, the limit holding it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.runtime.flow.admission import Limiter
from harvest_engine.states import ExecutionOutcome
from harvest_engine.workflow.waits import RunWait

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.runtime.engine import Engine
    from harvest_engine.store.rows import ExecutionRecord


def enqueued_outcome(engine: Engine, row: ExecutionRecord) -> ExecutionOutcome:
    """`ExecutionOutcome.Enqueued(queue)` of a run waiting in its queue."""
    with engine.store.flow_reads() as reads:
        wait = reads.wait_of(row.exec_id)
    return ExecutionOutcome.Enqueued(queue="" if wait is None else wait.queue)


def queue_wait(engine: Engine, row: ExecutionRecord) -> tuple[RunWait, ...]:
    """The run's place in its queue as a `RunWait` (kind "queue"); writes nothing.

    The limit is judged in a transaction that is rolled back, as the next
    admission would see it: the start delay, then the queue's limits (its
    slots, the partition's, the rate), else the runs ahead of it.
    """
    now = engine.clock.now()
    with engine.store.flow_reads() as reads:
        wait = reads.wait_of(row.exec_id)
        ahead = 0 if wait is None else reads.ahead_of(wait)
    if wait is None:
        return ()
    held, due = _held(engine, wait.queue, wait.partition_key, wait.due_at, now)
    return (
        RunWait(
            "queue",
            wait.queue,
            due_at=due,
            ahead=ahead,
            held_by=held if held is not None else "order",
        ),
    )


class _Peek(Exception):  # noqa: N818 - rolls the peek's transaction back
    pass


def _held(
    engine: Engine, queue: str, partition: str | None, due_at: datetime, now: datetime
) -> tuple[str | None, datetime | None]:
    if due_at > now:
        return "start_delay", due_at
    found: tuple[str | None, datetime | None] = (None, None)
    try:
        with engine.store.write() as txn:
            tables = txn.flow()
            row = tables.queue(queue)
            if row is not None:
                limiter = Limiter.for_runs(tables, row, now)
                held = limiter.held_by(partition)
                found = (held, limiter.next_token if held == "rate" else None)
            raise _Peek
    except _Peek:
        pass
    return found
