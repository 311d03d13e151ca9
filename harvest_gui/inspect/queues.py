"""Flow-control queues as the window says them: limits, which one holds a queue, a run's place (no Qt)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import QueueInfo, RunWait
from harvest_gui.inspect import formatting

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

HELD_WORDS = {
    "concurrency": "its concurrency limit",
    "worker_concurrency": "its per-worker concurrency limit",
    "partition_concurrency": "its partition's concurrency limit",
    "rate": "its rate limit",
    "start_delay": "its start delay",
    "order": "runs ahead of it",
}


def rate_text(rate: Any) -> str:
    """``10 per 1m`` (empty when the queue has no rate)."""
    if rate is None:
        return ""
    return f"{rate.limit} per {rate.per}"


def limits_text(q: QueueInfo) -> str:
    """Every limit the queue has, in words ("none" for a queue without limits)."""
    parts = []
    if q.concurrency is not None:
        parts.append(f"{q.concurrency} at once")
    if q.worker_concurrency is not None:
        parts.append(f"{q.worker_concurrency} per worker")
    if q.partition_concurrency is not None:
        parts.append(f"{q.partition_concurrency} per partition")
    if q.rate is not None:
        parts.append(rate_text(q.rate))
    if q.priority:
        parts.append("by priority")
    return ", ".join(parts) or "none"


def held_by(q: QueueInfo) -> str:
    """Which limit holds the queue's waiting runs, as far as its counts tell ("" when none wait)."""
    if not q.waiting:
        return ""
    if q.concurrency is not None and q.running >= q.concurrency:
        return f"concurrency ({q.running} of {q.concurrency} running)"
    if q.worker_concurrency is not None and q.running >= q.worker_concurrency:
        return f"worker concurrency ({q.running} of {q.worker_concurrency})"
    if q.rate is not None:
        return f"rate ({rate_text(q.rate)})"
    if q.partition_concurrency is not None:
        return f"partition concurrency ({q.partition_concurrency} per partition)"
    return "start delay or admission order (the next drive admits them)"


def oldest_text(q: QueueInfo, now: datetime) -> str:
    """How long the longest-waiting run has waited ("" when none waits)."""
    if q.oldest_wait is None:
        return ""
    return formatting.duration(max(0.0, (now - q.oldest_wait).total_seconds()))


def place_of(reads: Any, exec_id: str, queues: Sequence[QueueInfo]) -> RunWait | None:
    """An ENQUEUED run's place in its queue, read from the file (None when it waits in none).

    The writer's `rt.where_waiting` judges the holding limit in a rolled-back
    transaction; a reader cannot, so the limit is the queue's, from its counts.
    """
    wait = reads.wait_of(exec_id)
    if wait is None:
        return None
    ahead = int(reads.ahead_of(wait))
    info = next((q for q in queues if q.name == wait.queue), None)
    held = "order"
    if info is not None and (
        info.concurrency is not None and info.running >= info.concurrency
    ):
        held = "concurrency"
    elif info is not None and info.rate is not None:
        held = "rate"
    return RunWait(
        "queue", str(wait.queue), due_at=wait.due_at, ahead=ahead, held_by=held
    )


def place_line(wait: RunWait) -> str:
    """``its turn in queue 'emails': position 3 (2 ahead), held by its concurrency limit``."""
    ahead = wait.ahead or 0
    held = HELD_WORDS.get(wait.held_by or "order", wait.held_by or "order")
    return f"its turn in queue {wait.name!r}: position {ahead + 1} ({ahead} ahead), held by {held}"
