"""The JSON shape of client commands: results and typed errors as they cross between processes.

A reply row holds ``{"ok": result}`` or ``{"error": {"type", "message",
"fields"}}``. A harvest error travels as its class name, message and
structured fields and is rebuilt as the same class on the client, so a
client sees the same typed error as an in-process caller.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from harvest_engine import errors, payloads
from harvest_engine.errors import HarvestError, HarvestInternalError
from harvest_engine.runtime.talking.signal_with_start import SignalWithStartOutcome
from harvest_engine.runtime.talking.signals import SignalDelivery
from harvest_engine.runtime.talking.starts import StartOutcome
from harvest_engine.runtime.talking.update_with_start import UpdateWithStartOutcome
from harvest_engine.states import ExecutionId

if TYPE_CHECKING:
    from collections.abc import Callable

# Built-in errors a command may raise for a bad argument (the client checks
# most of them before writing, the serving process re-checks).
_BUILTIN_ERRORS: dict[str, type[Exception]] = {
    "TypeError": TypeError,
    "ValueError": ValueError,
}


def encode_error(exc: BaseException) -> dict[str, Any]:
    """The JSON form of an error a command raised."""
    if isinstance(exc, HarvestError):
        fields = json.loads(json.dumps(exc._fields, default=str))
        return {"type": type(exc).__name__, "message": exc.message, "fields": fields}
    return {"type": type(exc).__name__, "message": str(exc), "fields": {}}


def decode_error(data: Any) -> Exception:
    """The error a reply carries, as the class the serving process raised."""
    if not isinstance(data, dict):
        return HarvestInternalError(f"a command reply held no readable error: {data!r}")
    name = str(data.get("type", ""))
    message = str(data.get("message", ""))
    fields = data.get("fields") if isinstance(data.get("fields"), dict) else {}
    cls = getattr(errors, name, None)
    if isinstance(cls, type) and issubclass(cls, HarvestError):
        return errors._rebuild(cls, message, dict(fields or {}))
    builtin = _BUILTIN_ERRORS.get(name)
    if builtin is not None:
        return builtin(message)
    return HarvestInternalError(f"the serving process raised {name}: {message}")


def _start_outcome(value: StartOutcome) -> Any:
    return {"exec_id": str(value.exec_id), "started_fresh": value.started_fresh}


def _swso(value: SignalWithStartOutcome) -> Any:
    return {
        "exec_id": str(value.exec_id),
        "started_fresh": value.started_fresh,
        "signal_delivered": value.signal_delivered,
    }


def _delivery(value: SignalDelivery) -> Any:
    return {"exec_id": str(value.exec_id), "delivered": value.delivered}


def _uws(value: UpdateWithStartOutcome) -> Any:
    return {
        "exec_id": str(value.exec_id),
        "started_fresh": value.started_fresh,
        "result": value.result,
    }


def _same(value: Any) -> Any:
    return value


# kind -> (encode the runtime's return as JSON, decode it back on the client)
RESULTS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "start_workflow": (str, ExecutionId),
    "start_workflow_with_id": (str, ExecutionId),
    "start_workflow_with_reuse_policy": (
        _start_outcome,
        lambda j: StartOutcome(ExecutionId(j["exec_id"]), j["started_fresh"]),
    ),
    "start_workflow_with_options": (
        _start_outcome,
        lambda j: StartOutcome(ExecutionId(j["exec_id"]), j["started_fresh"]),
    ),
    "signal_with_start": (
        _swso,
        lambda j: SignalWithStartOutcome(
            ExecutionId(j["exec_id"]), j["started_fresh"], j["signal_delivered"]
        ),
    ),
    "send_signal": (_same, _same),
    "send_signal_idempotent": (bool, bool),
    "send_signal_by_workflow_id": (
        _delivery,
        lambda j: SignalDelivery(ExecutionId(j["exec_id"]), j["delivered"]),
    ),
    "cancel": (_same, _same),
    "terminate": (_same, _same),
    "query": (_same, _same),
    "update": (_same, _same),
    "update_with_start": (
        _uws,
        lambda j: UpdateWithStartOutcome(
            ExecutionId(j["exec_id"]), j["started_fresh"], j["result"]
        ),
    ),
}

KINDS = frozenset(RESULTS)


def ok_reply(kind: str, value: Any) -> str:
    """The reply row of a command that succeeded."""
    return payloads.dumps({"ok": RESULTS[kind][0](value)})


def error_reply(exc: BaseException) -> str:
    """The reply row of a command that raised."""
    return payloads.dumps({"error": encode_error(exc)})


def read_reply(kind: str, text: str | None) -> Any:
    """The result a reply row carries, or raise the error it carries."""
    try:
        data = payloads.loads(text or "")
    except ValueError:
        data = None
    if isinstance(data, dict) and "error" in data:
        raise decode_error(data["error"])
    if not isinstance(data, dict) or "ok" not in data:
        raise HarvestInternalError(f"a command reply is not readable: {text!r}")
    return RESULTS[kind][1](data["ok"])
