"""Errors of flow control: a bad queue or rate, an unknown queue, a refused start.

Each is raised before anything is written (at registration or at the
start), so a refused call leaves the store as it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors.base import SqliteError, _run_id

if TYPE_CHECKING:
    from harvest_engine.states import ExecutionId


class InvalidFlowOption(SqliteError, ValueError):
    """A flow option out of its documented range; nothing is written or registered.

    A queue, rate or start option (`Queue(concurrency=0)`, a priority out of
    range, queue options without a queue), or a start-shaping or breaker
    option (`Batch(0, ...)`, `debounce=0`, `max_input_bytes` over the
    ceiling, a bad `circuit_breaker`); raised when the value is built, at
    registration or at the start. A `ValueError` too. `owner` names the
    workflow or activity that declared the option, when one did.
    """

    def __init__(self, *, option: str, why: str, owner: str | None = None) -> None:
        where = option if owner is None else f"{owner}: {option}"
        super().__init__(f"{where}: {why}", option=option, why=why, owner=owner)


InvalidFlowControl = InvalidFlowOption
"""The same class under its former name (queues and rates raised it), kept for existing code."""


class UnknownQueue(SqliteError):
    """A start or an activity names a queue no `register_queue` declared."""

    _template = "no queue named {queue!r} is registered (register_queue it first)"

    def __init__(self, *, queue: str) -> None:
        super().__init__(queue=queue)


class QuotaExceeded(SqliteError):
    """A start over its workflow's `quota=Rate` was refused (nothing is written)."""

    _template = (
        "workflow {workflow_name!r} used its quota of {limit} starts per "
        "{per_seconds:g}s; the next start is allowed from {retry_after}"
    )

    def __init__(
        self, *, workflow_name: str, limit: int, per_seconds: float, retry_after: str
    ) -> None:
        super().__init__(
            workflow_name=workflow_name,
            limit=limit,
            per_seconds=per_seconds,
            retry_after=retry_after,
        )


class DuplicateEnqueue(SqliteError):
    """A start reused a `dedup_id` whose run is still ENQUEUED or RUNNING."""

    _template = (
        "queue {queue!r} already holds run {exec_id} ({state}) for dedup id "
        "{dedup_id!r}"
    )

    def __init__(
        self, *, queue: str, dedup_id: str, exec_id: ExecutionId | str, state: str
    ) -> None:
        super().__init__(
            queue=queue, dedup_id=dedup_id, exec_id=_run_id(exec_id), state=state
        )
