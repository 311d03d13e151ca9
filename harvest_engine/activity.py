"""ActivityContext and running one activity attempt (async on the loop, sync off it, with a budget)."""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.attempt_cancel import AttemptCancel
from harvest_engine.body_threads import run_in_thread
from harvest_engine.clock import monotonic
from harvest_engine.errors import (
    ActivityCancelled,
    ApplicationError,
    PayloadNotJson,
    PayloadTooDeep,
    PayloadTooLarge,
)
from harvest_engine.ledger import LlmCall
from harvest_engine.states import ErrorInfo
from harvest_engine.tracebacks import stack_trace

if TYPE_CHECKING:
    import contextvars
    from collections.abc import Callable

log = logging.getLogger("harvest_engine.activity")


@dataclass(frozen=True)
class ActivityRunInfo:
    """What `ActivityContext.info()` reports."""

    exec_id: str
    activity_name: str
    attempt: int
    max_attempts: int
    queue: str
    task_id: int
    activity_id: int
    workflow_name: str = ""


class ActivityContext:
    """Passed to an activity body: its identity, heartbeats, the previous failure, the ledger."""

    def __init__(
        self,
        info: ActivityRunInfo,
        *,
        idempotency_key: str,
        heartbeat_details: Any = None,
        previous_failure: ErrorInfo | None = None,
        save_heartbeat: Callable[[str], None] | None = None,
        cancel: AttemptCancel | None = None,
    ) -> None:
        self._info = info
        self._cancel = AttemptCancel() if cancel is None else cancel
        self._key = idempotency_key
        self._heartbeat = heartbeat_details
        self._previous = previous_failure
        self._save = save_heartbeat
        self.llm_calls: list[LlmCall] = []

    def info(self) -> ActivityRunInfo:
        """The run, the activity, the 1-based attempt, max_attempts, queue and task id."""
        return self._info

    def idempotency_key(self) -> str:
        """Stable across this call's attempts and re-runs; differs per call and per run."""
        return self._key

    def heartbeat(self, details: Any = None) -> None:
        """Checkpoint progress; a retry or a reopen resumes from `heartbeat_details()`.

        Raises:
            ActivityCancelled: the attempt was cancelled (its run cancelled,
                terminated or reset, its start-to-close passed, its handle
                cancelled): the body should stop; nothing is saved.
        """
        reason = self._cancel.reason
        if reason is not None:
            raise ActivityCancelled(f"activity attempt cancelled: {reason}")
        try:
            value, text = payloads.checked(details, "heartbeat")
        except (PayloadTooDeep, PayloadTooLarge) as exc:
            # A heartbeat over the caps is dropped with a warning; the last
            # good one stays (guide §6).
            log.warning(
                "activity %s (run %s, attempt %d): heartbeat dropped: %s",
                self._info.activity_name,
                self._info.exec_id,
                self._info.attempt,
                exc,
            )
            return
        self._heartbeat = value
        if self._save is not None:
            self._save(text)

    def heartbeat_details(self) -> Any:
        """The latest stored heartbeat payload, or None."""
        return self._heartbeat

    def previous_failure(self) -> ErrorInfo | None:
        """The error of the previous attempt, or None on the first."""
        return self._previous

    def record_llm_call(self, call: LlmCall) -> None:
        """Report a model call; written to the cost ledger when this attempt completes."""
        if not isinstance(call, LlmCall):
            raise TypeError(f"record_llm_call needs an LlmCall, got {call!r}")
        self.llm_calls.append(call)

    def is_cancelled(self) -> bool:
        """Whether this attempt was cancelled (False until then).

        It is once its run is cancelled, terminated or reset, its
        start-to-close passes, or its `ActivityHandle` is cancelled. A sync
        body that checks it (or heartbeats) can stop early; an async body
        also gets `asyncio.CancelledError` at its next await.
        """
        return self._cancel.reason is not None


@dataclass(frozen=True)
class AttemptResult:
    """How one attempt ended: `output` when ok, else `error` (and whether it timed out)."""

    ok: bool
    output: Any = None
    error: ErrorInfo | None = None
    timed_out: bool = False
    cancelled: bool = False
    llm_calls: list[LlmCall] = field(default_factory=list)


def error_info(exc: BaseException) -> ErrorInfo:
    """A body's exception as a stored failure."""
    if isinstance(exc, ApplicationError):
        message, details = storable_details(exc)
        return ErrorInfo(
            type=str(exc.type),
            message=message,
            non_retryable=bool(exc.non_retryable),
            details=details,
            stack_trace=stack_trace(exc),
        )
    if isinstance(exc, (PayloadTooDeep, PayloadTooLarge)):
        return ErrorInfo(
            type=type(exc).__name__,
            message=str(exc),
            non_retryable=True,
            stack_trace=stack_trace(exc),
        )
    return ErrorInfo(
        type=type(exc).__name__,
        message=str(exc) or type(exc).__name__,
        stack_trace=stack_trace(exc),
    )


def storable_details(exc: ApplicationError) -> tuple[str, Any]:
    """An error's message and its details as JSON; details that are not JSON are dropped.

    The failure itself must still be recorded, so the message says what was
    dropped instead of the write failing (and the task or run staying stuck).
    """
    try:
        return exc.message, payloads.to_json(exc.details, "error details")
    except PayloadNotJson as bad:
        reason = str(bad.reason)  # type: ignore[attr-defined]
        path = str(bad.path)  # type: ignore[attr-defined]
        if path != "$":
            reason = f"{reason} at {path}"
    except PayloadTooDeep as bad:
        reason = str(bad)
    return f"{exc.message} (details dropped: {reason})", None


def checked_output(value: Any) -> AttemptResult:
    """Apply the payload caps to a result: over them, or not JSON, is a non-retryable failure.

    The same body would return the same value again, so a retry cannot help
    (the caps are in the README's "Defaults and limits").
    """
    try:
        value, _ = payloads.checked(value, "activity result")
    except (PayloadTooDeep, PayloadTooLarge) as exc:
        return AttemptResult(ok=False, error=error_info(exc))
    except PayloadNotJson as exc:
        return wrong_shape(f"activity result is not a JSON value: {exc}")
    return AttemptResult(ok=True, output=value)


def wrong_shape(message: str) -> AttemptResult:
    """A final TypeError failure: a body returned what can never be stored, so no retry helps."""
    return AttemptResult(
        ok=False, error=ErrorInfo(type="TypeError", message=message, non_retryable=True)
    )


async def run_attempt(
    body: Callable[..., Any],
    args: tuple[Any, ...],
    *,
    budget: float | None,
    cancel: AttemptCancel | None = None,
    context: contextvars.Context | None = None,
) -> AttemptResult:
    """Run one attempt: a coroutine body on this loop, a plain one in a worker thread.

    `cancel` reaches the body (attempt_cancel.py): a coroutine gets
    CancelledError at its next await, a thread sees `is_cancelled()` and its
    next heartbeat raises. A budget cancels the attempt when it passes; a
    thread cannot be stopped, so a sync body is waited for, and is timed out
    when it returns late. A body that raises once cancelled ends
    `cancelled` (ActivityCancelled, never retried); one that returns keeps
    its result.

    With `context` a plain body runs in it (an interceptor's current span).
    """
    if cancel is None:
        cancel = AttemptCancel()
    if cancel.reason is not None:
        return cancelled_result(cancel.reason)  # cancelled before it began
    loop = asyncio.get_running_loop()
    timer = None if budget is None else loop.call_later(budget, cancel.time_out, budget)
    try:
        if is_coroutine_body(body):
            value = await cancel.run(body(*args))
        else:
            started = monotonic()
            call = (
                functools.partial(body, *args)
                if context is None
                else functools.partial(context.run, body, *args)
            )
            try:
                value = await run_in_thread(loop, call)
            except Exception as exc:  # noqa: BLE001 - the body's failure, as plain_outcome reads it
                return plain_outcome(None, exc, 0.0, budget, cancel)
            return plain_outcome(value, None, monotonic() - started, budget, cancel)
    except asyncio.CancelledError:
        if cancel.reason is None:
            raise  # not ours: the pass itself is being cancelled
        return _ended_by(cancel, budget)
    except Exception as exc:  # noqa: BLE001 - every body failure becomes a recorded error
        if cancel.reason is not None:
            return _ended_by(cancel, budget)
        return AttemptResult(ok=False, error=error_info(exc))
    finally:
        if timer is not None:
            timer.cancel()
    if cancel.timed_out:
        return _timed_out(budget or 0.0)
    return checked_output(value)


def plain_outcome(
    value: Any,
    error: BaseException | None,
    elapsed: float,
    budget: float | None,
    cancel: AttemptCancel,
) -> AttemptResult:
    """A plain body's attempt from what its thread gave: its value, or the error it raised.

    `run_attempt` awaits the thread and reads its outcome here; a pass
    running many plain bodies reads it here from a callback instead
    (runtime/serving/plain_bodies.py), so the two agree. A body that ran
    past its budget is timed out; raised once cancelled it ends cancelled.
    An error that is no `Exception` (a `CancelledError` of the body's own,
    a `KeyboardInterrupt`) is raised again, as it would leave an await.
    """
    if error is not None:
        if not isinstance(error, Exception):
            if isinstance(error, asyncio.CancelledError) and cancel.reason is not None:
                return _ended_by(cancel, budget)
            raise error
        if cancel.reason is not None:
            return _ended_by(cancel, budget)
        return AttemptResult(ok=False, error=error_info(error))
    if budget is not None and elapsed > budget:
        return _timed_out(budget)
    if cancel.timed_out:
        return _timed_out(budget or 0.0)
    return checked_output(value)


def cancelled_result(reason: str) -> AttemptResult:
    """How a cancelled attempt ends: ActivityCancelled, never retried."""
    return AttemptResult(
        ok=False,
        cancelled=True,
        error=ErrorInfo(
            type="ActivityCancelled",
            message=f"activity attempt cancelled: {reason}",
            non_retryable=True,
        ),
    )


def _ended_by(cancel: AttemptCancel, budget: float | None) -> AttemptResult:
    if cancel.timed_out:
        return _timed_out(budget or 0.0)
    return cancelled_result(cancel.reason or "cancelled")


def is_coroutine_body(body: Callable[..., Any]) -> bool:
    """`inspect.iscoroutinefunction`, remembered per body (it is asked every attempt)."""
    try:
        return _coroutine_function(body)
    except TypeError:  # an unhashable callable
        return inspect.iscoroutinefunction(body)


@functools.lru_cache(maxsize=1024)
def _coroutine_function(body: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(body)


def _timed_out(budget: float) -> AttemptResult:
    return AttemptResult(
        ok=False,
        timed_out=True,
        error=ErrorInfo(
            type="StartToCloseTimeout",
            message=f"activity attempt ran past its start_to_close of {budget:g}s",
        ),
    )
