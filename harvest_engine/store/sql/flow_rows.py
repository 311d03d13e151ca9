"""The rows of flow control's tables as the runtime and the readers take them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from harvest_engine.timestamps import from_micros

if TYPE_CHECKING:
    from collections.abc import Sequence

QUEUE_COLUMNS = (
    "name, concurrency, worker_concurrency, rate_limit, rate_per, "
    "partition_concurrency, priority, quota_limit, quota_per, next_token_at, "
    "quota_start, quota_used"
)


@dataclass(frozen=True)
class QueueRow:
    """A queue's stored limits and rate state (times in microseconds)."""

    name: str
    concurrency: int | None
    worker_concurrency: int | None
    rate_limit: int | None
    rate_per: float | None
    partition_concurrency: int | None
    priority: bool
    quota_limit: int | None
    quota_per: float | None
    next_token_at: int
    quota_start: int
    quota_used: int

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> QueueRow:
        """From a row selected with QUEUE_COLUMNS."""
        return cls(
            name=str(row[0]),
            concurrency=row[1],
            worker_concurrency=row[2],
            rate_limit=row[3],
            rate_per=None if row[4] is None else float(row[4]),
            partition_concurrency=row[5],
            priority=bool(row[6]),
            quota_limit=row[7],
            quota_per=None if row[8] is None else float(row[8]),
            next_token_at=int(row[9]),
            quota_start=int(row[10]),
            quota_used=int(row[11]),
        )

    @property
    def interval_us(self) -> int | None:
        """Microseconds between two admissions under the rate (None: no rate)."""
        if self.rate_limit is None or self.rate_per is None:
            return None
        return max(1, round(self.rate_per * 1_000_000 / self.rate_limit))


class LockedRun(NamedTuple):
    """A run an admission locked while it was still ENQUEUED."""

    workflow_name: str
    deadline: datetime | None
    """The deadline it kept while it waited (a child's own timeout), else None."""


@dataclass(frozen=True)
class WaitRow:
    """A run waiting in (or admitted by) a queue."""

    exec_id: str
    queue: str
    workflow_queue: str | None
    priority: int
    partition_key: str | None
    dedup_id: str | None
    enqueued_at: datetime
    due_at: datetime
    order: int
    run_state: str | None = None
    """The run's state, where the read asked for it (an admission's candidates)."""


@dataclass(frozen=True)
class WaitingTask:
    """An activity attempt waiting for a slot (a task row in status WAITING)."""

    id: int
    activity_name: str
    queue: str
    ready_at: datetime


WAIT_COLUMNS = (
    "exec_id, queue, workflow_queue, priority, partition_key, dedup_id, "
    "enqueued_at, due_at, id"
)


def wait_from_row(row: Sequence[Any]) -> WaitRow:
    """A WaitRow from a row selected with WAIT_COLUMNS (and the run's state after them)."""
    return WaitRow(
        exec_id=str(row[0]),
        queue=str(row[1]),
        workflow_queue=row[2],
        priority=int(row[3]),
        partition_key=row[4],
        dedup_id=row[5],
        enqueued_at=from_micros(int(row[6])),
        due_at=from_micros(int(row[7])),
        order=int(row[8]),
        run_state=None if len(row) < 10 else row[9],
    )
