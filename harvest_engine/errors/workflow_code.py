"""Errors raised in, by or about workflow and activity code.

Replay mismatches and refused calls, the `ApplicationError` family user code
raises and meets, a panicking or stuck workflow, and `ContinueAsNew`, which
is a `BaseException` so a workflow's ``except Exception:`` cannot swallow it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.errors.base import HarvestError, SqliteError, _rebuild, _run_id

if TYPE_CHECKING:
    from harvest_engine.states import ExecutionId


class NonDeterminismDetected(HarvestError):
    """Replaying workflow code produced a command the history did not record."""

    _template = (
        "non-determinism in run {exec_id} at event {seq}: {recorded} was recorded "
        "when {expected} was expected. Check that your workflow is deterministic "
        "(no wall clock, randomness, I/O or changed code paths)."
    )

    def __init__(
        self,
        *,
        exec_id: ExecutionId | str,
        seq: int | None,
        recorded: str,
        expected: str,
    ) -> None:
        super().__init__(
            exec_id=_run_id(exec_id), seq=seq, recorded=recorded, expected=expected
        )


class NonDeterministicCall(HarvestError):
    """Workflow code called something that would break deterministic replay."""

    _template = "{call} is not allowed in workflow code: use {instead} instead"

    def __init__(self, *, call: str, instead: str) -> None:
        super().__init__(call=call, instead=instead)


class ApplicationError(HarvestError):
    """A typed failure raised by activity or workflow code.

    Args:
        message: the human-readable text.
        type: an error type name; defaults to the class name.
        non_retryable: when true, no retry policy retries it.
        details: any JSON value to carry along.
    """

    type: str
    non_retryable: bool
    details: Any

    def __init__(
        self,
        message: str = "",
        *,
        type: str | None = None,
        non_retryable: bool = False,
        details: Any = None,
    ) -> None:
        super().__init__(
            message,
            type=type or self.__class__.__name__,
            non_retryable=non_retryable,
            details=details,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self._fields))


class ActivityError(ApplicationError):
    """An activity failed for good (its retries, if any, are used up)."""


class ActivityCancelled(ActivityError):
    """An activity attempt was cancelled; so is the activity when workflow code awaits it.

    An attempt is cancelled when its run is cancelled, terminated or reset,
    when its start-to-close passes, or when workflow code cancels its
    `ActivityHandle`. A sync body gets it from its next `heartbeat()` (an
    async body gets `asyncio.CancelledError` at its next await); workflow
    code awaiting a cancelled handle gets it too. Never retried.
    """

    def __init__(
        self,
        message: str = "activity cancelled",
        *,
        type: str | None = None,
        non_retryable: bool = True,
        details: Any = None,
    ) -> None:
        super().__init__(
            message, type=type, non_retryable=non_retryable, details=details
        )


class ChildWorkflowError(ApplicationError):
    """A child workflow failed, was cancelled or was terminated."""


class ExternalWorkflowError(ApplicationError):
    """A command to another run failed (`target_unknown`, `target_terminated`)."""


class ContinueAsNew(BaseException):
    """Raised by `ctx.continue_as_new(input)`; ends the run and starts its successor.

    A `BaseException`, so a workflow's ``except Exception:`` cannot swallow it.
    """

    def __init__(self, input: Any) -> None:
        super().__init__("continue as new")
        self.input = input


class WorkflowPanicked(SqliteError):
    """Workflow code raised a non-application exception (a bug in the code).

    The cycle rolled back and the run stays RUNNING, until the third
    consecutive panic fails it with error type ``Panic``. `details` holds
    the user-code traceback (`traceback`: file, line, function, source per
    frame); `retry_at` is when `poll_once`, `run_until_idle` and `serve`
    try the run again (1 s, then 2 s, ... after each panic).
    """

    _template = (
        "workflow code of run {exec_id} raised {error} (panic {count} of {budget}"
        "{retry})"
    )

    def __init__(
        self,
        *,
        exec_id: ExecutionId | str,
        error: str,
        count: int,
        budget: int,
        details: Any = None,
        retry_at: Any = None,
    ) -> None:
        super().__init__(
            exec_id=_run_id(exec_id),
            error=error,
            count=count,
            budget=budget,
            details=details,
            retry_at=retry_at,
            retry="" if retry_at is None else f"; a pass retries it from {retry_at}",
        )


class Stuck(SqliteError):
    """The run waits on nothing a drive can provide (e.g. `await_condition`)."""

    _template = (
        "run {exec_id} is blocked on a condition with no pending work; send a "
        "signal or update that changes it, then drive again"
    )

    def __init__(self, *, exec_id: ExecutionId | str) -> None:
        super().__init__(exec_id=_run_id(exec_id))
