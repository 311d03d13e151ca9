"""Authoring: @workflow, @activity, @query, @update, RetryPolicy and the infos they attach.

Decorators check at decoration time and never wrap: they attach
`.info` and return the function itself, so it stays callable as a plain
function. Options the SQLite backend cannot honour are accepted here and
refused by `register_*`, so the same code can target another
backend.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar, overload

from harvest_engine.durations import Duration, to_timedelta

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class RetryPolicy:
    """How a failed activity (or workflow) is retried.

    Args:
        max_attempts: total attempts including the first; 0 means unlimited.
        initial_interval: the first backoff.
        backoff_coefficient: each later backoff is multiplied by this.
        maximum_interval: backoffs never exceed this (default 100x initial).
        non_retryable_error_types: error type names that fail at once.
    """

    max_attempts: int = 0
    initial_interval: Duration = 1.0
    backoff_coefficient: float = 2.0
    maximum_interval: Duration | None = None
    non_retryable_error_types: Sequence[str] = ()

    def __post_init__(self) -> None:
        if self.max_attempts < 0:
            raise ValueError("RetryPolicy.max_attempts must be >= 0")
        if self.backoff_coefficient < 1:
            raise ValueError("RetryPolicy.backoff_coefficient must be >= 1")
        to_timedelta(self.initial_interval, what="RetryPolicy.initial_interval")
        if self.maximum_interval is not None:
            to_timedelta(self.maximum_interval, what="RetryPolicy.maximum_interval")

    def backoff(self, failed_attempt: int) -> timedelta:
        """The wait after attempt number `failed_attempt` (1-based) failed."""
        initial = to_timedelta(self.initial_interval).total_seconds()
        cap = (
            to_timedelta(self.maximum_interval).total_seconds()
            if self.maximum_interval is not None
            else initial * 100
        )
        seconds = min(initial * self.backoff_coefficient ** (failed_attempt - 1), cap)
        return timedelta(milliseconds=round(seconds * 1000))

    def retries(self, attempt: int, error_type: str, non_retryable: bool) -> bool:
        """Whether a failure of `attempt` with this error type gets another attempt."""
        if non_retryable or error_type in self.non_retryable_error_types:
            return False
        return self.max_attempts == 0 or attempt < self.max_attempts

    def to_json(self) -> dict[str, Any]:
        """As frozen into a task or run row."""
        return {
            "max_attempts": self.max_attempts,
            "initial_interval": to_timedelta(self.initial_interval).total_seconds(),
            "backoff_coefficient": self.backoff_coefficient,
            "maximum_interval": None
            if self.maximum_interval is None
            else to_timedelta(self.maximum_interval).total_seconds(),
            "non_retryable_error_types": list(self.non_retryable_error_types),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RetryPolicy:
        """Read a frozen policy back."""
        return cls(
            max_attempts=int(data.get("max_attempts", 0)),
            initial_interval=float(data.get("initial_interval", 1.0)),
            backoff_coefficient=float(data.get("backoff_coefficient", 2.0)),
            maximum_interval=data.get("maximum_interval"),
            non_retryable_error_types=tuple(data.get("non_retryable_error_types", ())),
        )


@dataclass(frozen=True)
class WorkflowInfo:
    """What `@workflow` attaches to a workflow function as `.info`."""

    name: str
    fn: Callable[..., Any]
    execution_timeout: timedelta | None = None
    retry: RetryPolicy | None = None
    options: dict[str, Any] = field(default_factory=dict)
    input_type: Any = None


@dataclass(frozen=True)
class ActivityInfo:
    """What `@activity` attaches to an activity function as `.info`."""

    name: str
    fn: Callable[..., Any] | None
    retry: RetryPolicy | None = None
    start_to_close: timedelta | None = None
    schedule_to_close: timedelta | None = None
    local: bool = False
    queue: str = "default"
    heartbeat_timeout: timedelta | None = None
    options: dict[str, Any] = field(default_factory=dict)
    input_type: Any = None

    @property
    def is_async(self) -> bool:
        """Whether the body is a coroutine function (runs on the loop)."""
        return self.fn is not None and inspect.iscoroutinefunction(self.fn)

    @property
    def max_attempts(self) -> int:
        """Attempts allowed; one when no retry is declared."""
        return 1 if self.retry is None else self.retry.max_attempts


@dataclass(frozen=True)
class HandlerInfo:
    """What `@query` / `@update` attach: a declarative handler for one workflow."""

    kind: str
    name: str
    workflow: str
    fn: Callable[..., Any]
    input_type: Any = None


@overload
def workflow(
    fn: F,
    *,
    name: str | None = None,
    execution_timeout: Duration | None = None,
    retry: RetryPolicy | None = None,
    **options: Any,
) -> F: ...


@overload
def workflow(
    fn: None = None,
    *,
    name: str | None = None,
    execution_timeout: Duration | None = None,
    retry: RetryPolicy | None = None,
    **options: Any,
) -> Callable[[F], F]: ...


def workflow(
    fn: F | None = None,
    *,
    name: str | None = None,
    execution_timeout: Duration | None = None,
    retry: RetryPolicy | None = None,
    **options: Any,
) -> F | Callable[[F], F]:
    """Declare a workflow: ``async def wf(ctx: WorkflowContext, input) -> result``.

    Args:
        fn: the function (when used bare, ``@workflow``).
        name: the registered name; defaults to the function name.
        execution_timeout: the run's deadline, counted from its start.
        retry: a workflow-level retry policy, frozen at start.
        **options: the seed's options: ``debounce=``, ``batch=Batch(...)`` and
            ``max_input_bytes=`` are honoured (`harvest_engine.shaping`); one
            this runtime does not honour is refused at register time.
    """

    def decorate(func: F) -> F:
        _require_coroutine(func, "@workflow")
        _require_params(func, "@workflow", "(ctx, input)")
        func.info = WorkflowInfo(  # type: ignore[attr-defined]
            name=name or func.__name__,
            fn=func,
            execution_timeout=None
            if execution_timeout is None
            else to_timedelta(execution_timeout, what="execution_timeout"),
            retry=retry,
            options=dict(options),
            input_type=_param_type(func, 1),
        )
        return func

    return decorate(fn) if fn is not None else decorate


@overload
def activity(
    fn: F,
    *,
    name: str | None = None,
    retry: RetryPolicy | None = None,
    start_to_close: Duration | None = None,
    schedule_to_close: Duration | None = None,
    local: bool = False,
    queue: str = "default",
    heartbeat_timeout: Duration | None = None,
    **options: Any,
) -> F: ...


@overload
def activity(
    fn: None = None,
    *,
    name: str | None = None,
    retry: RetryPolicy | None = None,
    start_to_close: Duration | None = None,
    schedule_to_close: Duration | None = None,
    local: bool = False,
    queue: str = "default",
    heartbeat_timeout: Duration | None = None,
    **options: Any,
) -> Callable[[F], F]: ...


def activity(
    fn: F | None = None,
    *,
    name: str | None = None,
    retry: RetryPolicy | None = None,
    start_to_close: Duration | None = None,
    schedule_to_close: Duration | None = None,
    local: bool = False,
    queue: str = "default",
    heartbeat_timeout: Duration | None = None,
    **options: Any,
) -> F | Callable[[F], F]:
    """Declare an activity: ``[async] def act(ctx: ActivityContext, input) -> result``.

    Args:
        fn: the function (when used bare, ``@activity``).
        name: the registered name; defaults to the function name.
        retry: retry policy; without one an activity gets exactly one attempt.
        start_to_close: the limit of one attempt.
        schedule_to_close: the limit of all attempts together.
        local: run inline as a local activity.
        queue: the task queue name.
        heartbeat_timeout: declared for other backends; refused here.
        **options: the seed's options: ``circuit_breaker=CircuitBreaker(...)``
            is honoured; one this runtime does not honour is refused at
            register time.
    """

    def decorate(func: F) -> F:
        if not callable(func):
            raise TypeError(f"@activity needs a function, got {func!r}")
        func.info = ActivityInfo(  # type: ignore[attr-defined]
            name=name or func.__name__,
            fn=func,
            retry=retry,
            start_to_close=_opt_td(start_to_close, "start_to_close"),
            schedule_to_close=_opt_td(schedule_to_close, "schedule_to_close"),
            local=local,
            queue=queue,
            heartbeat_timeout=_opt_td(heartbeat_timeout, "heartbeat_timeout"),
            options=dict(options),
            input_type=_param_type(func, 1),
        )
        return func

    return decorate(fn) if fn is not None else decorate


@overload
def query(fn: F, *, workflow: str, name: str | None = None) -> F: ...


@overload
def query(
    fn: None = None, *, workflow: str, name: str | None = None
) -> Callable[[F], F]: ...


def query(
    fn: F | None = None, *, workflow: str, name: str | None = None
) -> F | Callable[[F], F]:
    """Declare a query handler ``fn(ctx, arg)`` serving runs of `workflow`."""
    return _handler("query", fn, workflow, name)


@overload
def update(fn: F, *, workflow: str, name: str | None = None) -> F: ...


@overload
def update(
    fn: None = None, *, workflow: str, name: str | None = None
) -> Callable[[F], F]: ...


def update(
    fn: F | None = None, *, workflow: str, name: str | None = None
) -> F | Callable[[F], F]:
    """Declare an update handler ``[async] fn(ctx, arg)`` serving runs of `workflow`."""
    return _handler("update", fn, workflow, name)


def _handler(
    kind: str, fn: F | None, workflow_name: str, name: str | None
) -> F | Callable[[F], F]:
    def decorate(func: F) -> F:
        if not callable(func):
            raise TypeError(f"@{kind} needs a function, got {func!r}")
        func.info = HandlerInfo(  # type: ignore[attr-defined]
            kind=kind,
            name=name or func.__name__,
            workflow=workflow_name,
            fn=func,
            input_type=_param_type(func, 1),
        )
        return func

    return decorate(fn) if fn is not None else decorate


def info_of(obj: Any, kind: type[Any]) -> Any:
    """The `.info` of a decorated function, checking its kind."""
    info = getattr(obj, "info", None)
    if isinstance(obj, kind):
        return obj
    if not isinstance(info, kind):
        raise TypeError(
            f"{obj!r} is not decorated with @{kind.__name__.removesuffix('Info').lower()}"
        )
    return info


def _require_coroutine(func: Callable[..., Any], deco: str) -> None:
    if not inspect.iscoroutinefunction(func):
        raise TypeError(
            f"{deco} {getattr(func, '__qualname__', func)!r} must be an async def"
        )


def _require_params(func: Callable[..., Any], deco: str, shape: str) -> None:
    params = list(inspect.signature(func).parameters.values())
    if not params:
        raise TypeError(f"{deco} {func.__qualname__!r} must take {shape}")


def _param_type(func: Callable[..., Any], index: int) -> Any:
    try:
        params = list(inspect.signature(func).parameters.values())
        hints = typing.get_type_hints(func)
    except (NameError, TypeError, ValueError):
        return None
    if len(params) <= index:
        return None
    return hints.get(params[index].name)


def _opt_td(value: Duration | None, what: str) -> timedelta | None:
    return None if value is None else to_timedelta(value, what=what)
