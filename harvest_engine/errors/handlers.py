"""Errors of queries and updates sent to a run's handlers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors.base import SqliteError, _run_id

if TYPE_CHECKING:
    from harvest_engine.states import ExecutionId


class QueryNotFound(SqliteError):
    """The run has no query handler of this name."""

    _template = "run {exec_id} has no query handler {name!r} (known: {known})"

    def __init__(
        self, *, exec_id: ExecutionId | str, name: str, known: str = "none"
    ) -> None:
        super().__init__(exec_id=_run_id(exec_id), name=name, known=known)


class QueryFailed(SqliteError):
    """The query handler raised."""

    _template = "query {name!r} of run {exec_id} failed: {error}"

    def __init__(self, *, exec_id: ExecutionId | str, name: str, error: str) -> None:
        super().__init__(exec_id=_run_id(exec_id), name=name, error=error)


class QueryTimedOut(SqliteError):
    """The query's replay did not finish within the query timeout."""

    _template = "query {name!r} of run {exec_id} timed out after {seconds}s"

    def __init__(
        self, *, exec_id: ExecutionId | str, name: str, seconds: float
    ) -> None:
        super().__init__(exec_id=_run_id(exec_id), name=name, seconds=seconds)


class UpdateInputInvalid(SqliteError):
    """The update's input does not match the handler's declared type."""

    _template = "update {name!r} input is invalid: {reason}"

    def __init__(self, *, name: str, reason: str) -> None:
        super().__init__(name=name, reason=reason)


class UpdateRejected(SqliteError):
    """The update's validator refused it; no event was written."""

    _template = "update {name!r} rejected: {reason}"

    def __init__(self, *, name: str, reason: str) -> None:
        super().__init__(name=name, reason=reason)


class UpdateFailed(SqliteError):
    """The update handler raised; an `UpdateFailed` event records it."""

    _template = "update {name!r} failed: {error}"

    def __init__(self, *, name: str, error: str) -> None:
        super().__init__(name=name, error=error)


class UpdateTimedOut(SqliteError):
    """The update handler ran past its limit or awaited a durable command."""

    _template = "update {name!r} timed out: {reason}"

    def __init__(self, *, name: str, reason: str) -> None:
        super().__init__(name=name, reason=reason)


class UpdateHistoryCapReached(SqliteError):
    """The update's events would reach a history cap; the run failed at it."""

    _template = "update {name!r} would reach the history cap of run {exec_id}"

    def __init__(self, *, name: str, exec_id: ExecutionId | str) -> None:
        super().__init__(name=name, exec_id=_run_id(exec_id))
