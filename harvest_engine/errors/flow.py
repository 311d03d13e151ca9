"""Errors of flow control: a bad queue or rate, an unknown queue, a refused start.

Each is raised before anything is written (at registration or at the
start), so a refused call leaves the store as it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors.base import SqliteError, _run_id

if TYPE_CHECKING:
    from harvest_engine.states import ExecutionId


class InvalidFlowControl(SqliteError, ValueError):
    """A queue, rate or start option out of its documented range (nothing is written)."""

    _template = "{what}: {reason}"

    def __init__(self, *, what: str, reason: str) -> None:
        super().__init__(what=what, reason=reason)


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
