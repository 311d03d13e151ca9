"""Errors recorded in history as JSON, raised again in workflow code, live or on replay.

A failed activity, child or awaited run, a failed side effect and a signal
or cancel another run refused are recorded with their error; every replay
raises the same exception from it.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import (
    ActivityCancelled,
    ActivityError,
    ApplicationError,
    ChildWorkflowError,
    ExternalWorkflowError,
    PayloadTooDeep,
    PayloadTooLarge,
)
from harvest_engine.states import ErrorInfo
from harvest_engine.tracebacks import carry_trace

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable


def raise_recorded(recorded: Any) -> None:
    """Raise the ExternalWorkflowError a signal or cancel to another run recorded."""
    if isinstance(recorded, dict) and isinstance(recorded.get("error"), dict):
        err = recorded["error"]
        raise ExternalWorkflowError(
            str(err.get("message", "")),
            type=str(err.get("type") or "ExternalWorkflowError"),
            non_retryable=bool(err.get("non_retryable")),
            details=err.get("details"),
        )


def side_effect_error(err: dict[str, Any]) -> Exception:
    """The recorded failure of a side effect, raised again on every replay.

    A value over the payload caps is refused with the cap's own error, as at
    every other call site in workflow code.
    """
    details = err.get("details")
    fields = details if isinstance(details, dict) else {}
    what = "side effect value"
    if err.get("type") == "PayloadTooDeep":
        return PayloadTooDeep(
            what=what, limit=int(fields.get("limit") or payloads.MAX_PAYLOAD_DEPTH)
        )
    if err.get("type") == "PayloadTooLarge":
        return PayloadTooLarge(
            what=what,
            size=int(fields.get("size") or 0),
            limit=int(fields.get("limit") or payloads.MAX_PAYLOAD_BYTES),
        )
    return ApplicationError(
        err.get("message", ""), type=err.get("type"), details=details
    )


def error_json(exc: BaseException) -> dict[str, Any]:
    """The JSON a side effect's failure is recorded as (type, message, details)."""
    if isinstance(exc, ApplicationError):
        return {"type": exc.type, "message": exc.message, "details": exc.details}
    return {"type": type(exc).__name__, "message": str(exc), "details": None}


def side_effect_result(fn: Callable[[], Any]) -> dict[str, Any]:
    """Run a side effect's `fn` live: ``{"value": ...}`` to record, or ``{"error": ...}``."""
    try:
        value = fn()
        if inspect.isawaitable(value):
            raise TypeError("side_effect needs a plain function, not a coroutine")
        value, _ = payloads.checked(value, "side effect value")
    except PayloadTooDeep as exc:
        details = {"limit": getattr(exc, "limit", None)}
        return {"error": {**error_json(exc), "details": details}}
    except PayloadTooLarge as exc:
        details = {
            "size": getattr(exc, "size", None),
            "limit": getattr(exc, "limit", None),
        }
        return {"error": {**error_json(exc), "details": details}}
    except Exception as exc:
        return {"error": error_json(exc)}
    return {"value": value}


def activity_error(attrs: dict[str, Any]) -> ActivityError:
    """The ActivityError workflow code sees for a recorded ActivityFailed."""
    info = ErrorInfo.from_json(attrs.get("error"))
    kind = ActivityCancelled if info.type == "ActivityCancelled" else ActivityError
    error = kind(
        info.message,
        type=info.type,
        non_retryable=info.non_retryable,
        details=info.details,
    )
    carry_trace(error, info.stack_trace)
    return error


def answer_wait(
    future: asyncio.Future[Any] | None,
    attrs: dict[str, Any],
    error_type: type[ChildWorkflowError] | type[ExternalWorkflowError],
) -> None:
    """Settle an awaited child or external run's future with its recorded result or error."""
    if future is None or future.done():
        return
    if "error" in attrs:
        info = ErrorInfo.from_json(attrs.get("error"))
        error = error_type(
            info.message,
            type=info.type,
            non_retryable=info.non_retryable,
            details=info.details,
        )
        future.set_exception(carry_trace(error, info.stack_trace))
    else:
        future.set_result(attrs.get("result"))
