"""How a refused HTTP request answers: each typed error's status and its JSON body.

A harvest error keeps the shape a client command's reply gives it
(`wire.encode_error`: type, message, structured fields), so an HTTP caller
and a Python caller see the same error; the status says its family. Refusals
of the HTTP layer itself (no token, read-only, unknown route, ...) are
`HttpRefusal`s with their own type names.
"""

from __future__ import annotations

import logging
from typing import Any

from harvest_engine import errors, wire

log = logging.getLogger("harvest_engine.http")


class HttpRefusal(Exception):
    """A request the HTTP layer refuses before it reaches the runtime or the client.

    Args:
        status: the HTTP status.
        type: the error's name in the body (``Unauthorized``, ``ReadOnly``, ...).
        message: what went wrong and what to do, for a person.
        headers: extra response headers (``WWW-Authenticate``, ``Allow``).
        fields: structured detail for a program.
    """

    def __init__(
        self,
        status: int,
        type: str,  # noqa: A002 - the body's key
        message: str,
        *,
        headers: dict[str, str] | None = None,
        **fields: Any,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.headers = headers or {}
        self.fields = fields


# First match wins, so a subclass comes before its base (NotServed is a
# CommandTimedOut; InvalidName is a TypeError and a ValueError).
_STATUSES: tuple[
    tuple[type[BaseException] | tuple[type[BaseException], ...], int], ...
] = (
    (
        (
            errors.ExecutionNotFound,
            errors.WorkflowIdNotFound,
            errors.ScheduleNotFound,
            errors.QueryNotFound,
        ),
        404,
    ),
    (
        (
            errors.WorkflowNotRunning,
            errors.WorkflowAlreadyStarted,
            errors.ExecutionExists,
            errors.NotResettable,
            errors.DuplicateEnqueue,
        ),
        409,
    ),
    (errors.QuotaExceeded, 429),
    (errors.PayloadTooLarge, 413),
    ((errors.NotServed, errors.DatabaseLocked, errors.DatabaseClosed), 503),
    ((errors.CommandTimedOut, errors.QueryTimedOut, errors.UpdateTimedOut), 504),
    (
        (
            errors.PayloadTooDeep,
            errors.PayloadNotJson,
            errors.InvalidName,
            errors.InvalidSignal,
            errors.InvalidFilter,
            errors.InvalidSearchAttribute,
            errors.BlankWorkflowId,
            errors.UnknownWorkflow,
            errors.UnknownActivity,
            errors.UnknownQueue,
            errors.InvalidResetPoint,
            errors.Unsupported,
            errors.UpdateInputInvalid,
            errors.UpdateRejected,
            errors.UpdateHistoryCapReached,
            errors.QueryFailed,
            errors.UpdateFailed,
            TypeError,
            ValueError,
        ),
        422,
    ),
)


def status_of(exc: BaseException) -> int:
    """The HTTP status of an error a call raised (500 for anything unforeseen)."""
    if isinstance(exc, HttpRefusal):
        return exc.status
    for kinds, status in _STATUSES:
        if isinstance(exc, kinds):
            return status
    return 500


def error_body(exc: BaseException) -> dict[str, Any]:
    """``{"error": {"type", "message", "fields", "status"}}`` for an error.

    An error no rule foresaw (a bug, a storage failure) is logged with its
    traceback and named by its type only: its text may hold paths or SQL a
    remote caller has no business reading.
    """
    status = status_of(exc)
    body: dict[str, Any]
    if isinstance(exc, HttpRefusal):
        body = {"type": exc.type, "message": exc.message, "fields": exc.fields}
    elif status == 500 and not isinstance(exc, errors.HarvestError):
        log.error("an HTTP call failed", exc_info=exc)
        body = {
            "type": "InternalError",
            "message": f"the server failed ({type(exc).__name__}); see its log",
            "fields": {},
        }
    else:
        if status == 500:
            log.error("an HTTP call failed", exc_info=exc)
        body = wire.encode_error(exc)
    body["status"] = status
    return {"error": body}
