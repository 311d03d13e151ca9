"""The JSON shape of client commands and replies: one typed record per command kind.

A client queues a row (kind, JSON arguments); the serving process reads it
back as the same record and answers with ``{"ok": result}`` or ``{"error":
{"type", "message", "fields"}}``. Each kind is spelled once, as the `KIND` of
its record: the record's fields are its arguments, and its `encode_result` /
`decode_result` carry the result across. A harvest error travels as its
class name, message and structured fields and is rebuilt as the same class
on the client, so a client sees the same typed error as an in-process caller.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from harvest_engine import errors, payloads
from harvest_engine.calls import (
    SignalDelivery,
    SignalWithStartOutcome,
    UpdateWithStartOutcome,
)
from harvest_engine.errors import HarvestError, HarvestInternalError
from harvest_engine.states import ExecutionId
from harvest_engine.wire_base import Command as Command
from harvest_engine.wire_base import ReturnsExecId, ReturnsStartOutcome
from harvest_engine.wire_repairs import REPAIR_COMMANDS
from harvest_engine.wire_schedules import BackfillSchedule as BackfillSchedule
from harvest_engine.wire_schedules import DeleteSchedule as DeleteSchedule
from harvest_engine.wire_schedules import PauseSchedule as PauseSchedule
from harvest_engine.wire_schedules import ResumeSchedule as ResumeSchedule
from harvest_engine.wire_schedules import TriggerSchedule as TriggerSchedule
from harvest_engine.wire_schedules import UpsertSchedule as UpsertSchedule

# Built-in errors a command may raise for a bad argument (the client checks
# most of them before writing, the serving process re-checks).
_BUILTIN_ERRORS: dict[str, type[Exception]] = {
    "TypeError": TypeError,
    "ValueError": ValueError,
}

ALLOW_DUPLICATE = "ALLOW_DUPLICATE"


@dataclass(frozen=True)
class StartWorkflow(ReturnsExecId):
    """`start_workflow`: a fresh run."""

    KIND = "start_workflow"
    name: str
    input: Any = None


@dataclass(frozen=True)
class StartWorkflowWithId(ReturnsExecId):
    """`start_workflow_with_id`: attach to the RUNNING run of the id, or start one."""

    KIND = "start_workflow_with_id"
    name: str
    workflow_id: str
    input: Any = None


@dataclass(frozen=True)
class StartWorkflowWithReusePolicy(ReturnsStartOutcome):
    """`start_workflow_with_reuse_policy` (the policy by name)."""

    KIND = "start_workflow_with_reuse_policy"
    name: str
    workflow_id: str
    input: Any = None
    reuse_policy: str = ALLOW_DUPLICATE


@dataclass(frozen=True)
class StartWorkflowWithOptions(ReturnsStartOutcome):
    """`start_workflow_with_options`, the options spread into fields."""

    KIND = "start_workflow_with_options"
    name: str
    input: Any = None
    workflow_id: str | None = None
    memo: Any = None
    search_attributes: dict[str, Any] | None = None
    reuse_policy: str = ALLOW_DUPLICATE
    summary: str | None = None
    details: str | None = None
    queue: str | None = None
    priority: int | None = None
    partition_key: str | None = None
    dedup_id: str | None = None
    start_delay: float | None = None


@dataclass(frozen=True)
class SignalWithStartCommand(Command):
    """`signal_with_start`, the request spread into fields."""

    KIND = "signal_with_start"
    workflow_name: str
    workflow_id: str
    signal_name: str
    input: Any = None
    reuse_policy: str = ALLOW_DUPLICATE
    signal_payload: Any = None
    idempotency_key: str | None = None

    @staticmethod
    def encode_result(value: Any) -> Any:
        """The outcome as JSON."""
        return {
            "exec_id": str(value.exec_id),
            "started_fresh": value.started_fresh,
            "signal_delivered": value.signal_delivered,
        }

    @staticmethod
    def decode_result(data: Any) -> Any:
        """The outcome back."""
        return SignalWithStartOutcome(
            ExecutionId(data["exec_id"]),
            data["started_fresh"],
            data["signal_delivered"],
        )


@dataclass(frozen=True)
class SendSignal(Command):
    """`send_signal`."""

    KIND = "send_signal"
    exec_id: str
    name: str
    payload: Any = None
    key: str | None = None


@dataclass(frozen=True)
class SendSignalIdempotent(Command):
    """`send_signal_idempotent`: whether the run took the signal."""

    KIND = "send_signal_idempotent"
    exec_id: str
    name: str
    payload: Any = None
    key: str | None = None

    @staticmethod
    def encode_result(value: Any) -> Any:
        """The answer as JSON."""
        return bool(value)

    @staticmethod
    def decode_result(data: Any) -> Any:
        """The answer back."""
        return bool(data)


@dataclass(frozen=True)
class SendSignalByWorkflowId(Command):
    """`send_signal_by_workflow_id`: where the signal went."""

    KIND = "send_signal_by_workflow_id"
    workflow_name: str
    workflow_id: str
    name: str
    payload: Any = None
    key: str | None = None

    @staticmethod
    def encode_result(value: Any) -> Any:
        """The delivery as JSON."""
        return {"exec_id": str(value.exec_id), "delivered": value.delivered}

    @staticmethod
    def decode_result(data: Any) -> Any:
        """The delivery back."""
        return SignalDelivery(ExecutionId(data["exec_id"]), data["delivered"])


@dataclass(frozen=True)
class Cancel(Command):
    """`cancel`."""

    KIND = "cancel"
    exec_id: str
    reason: str | None = None


@dataclass(frozen=True)
class Terminate(Command):
    """`terminate`."""

    KIND = "terminate"
    exec_id: str
    reason: str | None = None


@dataclass(frozen=True)
class Query(Command):
    """`query`: its JSON answer."""

    KIND = "query"
    exec_id: str
    name: str
    arg: Any = None


@dataclass(frozen=True)
class Update(Command):
    """`update`: its JSON result."""

    KIND = "update"
    exec_id: str
    name: str
    arg: Any = None


@dataclass(frozen=True)
class UpdateWithStartCommand(Command):
    """`update_with_start`, the request spread into fields."""

    KIND = "update_with_start"
    workflow_name: str
    workflow_id: str
    update_name: str
    input: Any = None
    update_arg: Any = None
    reuse_policy: str = ALLOW_DUPLICATE

    @staticmethod
    def encode_result(value: Any) -> Any:
        """The outcome as JSON."""
        return {
            "exec_id": str(value.exec_id),
            "started_fresh": value.started_fresh,
            "result": value.result,
        }

    @staticmethod
    def decode_result(data: Any) -> Any:
        """The outcome back."""
        return UpdateWithStartOutcome(
            ExecutionId(data["exec_id"]), data["started_fresh"], data["result"]
        )


_RECORDS: tuple[type[Command], ...] = (
    StartWorkflow,
    StartWorkflowWithId,
    StartWorkflowWithReusePolicy,
    StartWorkflowWithOptions,
    SignalWithStartCommand,
    SendSignal,
    SendSignalIdempotent,
    SendSignalByWorkflowId,
    Cancel,
    Terminate,
    Query,
    Update,
    UpdateWithStartCommand,
    UpsertSchedule,
    PauseSchedule,
    ResumeSchedule,
    DeleteSchedule,
    TriggerSchedule,
    BackfillSchedule,
    *REPAIR_COMMANDS,
)
COMMANDS: dict[str, type[Command]] = {record.KIND: record for record in _RECORDS}
"""Every command record by its kind."""

KINDS = frozenset(COMMANDS)


def command(kind: str, text: str) -> Command:
    """The record a queued row holds; ValueError / TypeError for a malformed one."""
    record = COMMANDS.get(kind)
    if record is None:
        raise ValueError(f"unknown client command {kind!r}")
    args = payloads.loads(text)
    if not isinstance(args, dict):
        raise TypeError(f"command arguments are a JSON object, got {args!r}")
    known = {f.name for f in fields(record)}
    return record(**{k: v for k, v in args.items() if k in known})


HEADERS_KEY = "headers"
"""The arguments' key of the headers a command carries (interceptors); no record's field."""


def signalled_run(record: Command | None) -> str | None:
    """The run a signal command names: its applier locks it with the command's claim.

    The client names it in its notice too (Postgres), so that claim and lock
    travel before the command's row is read.
    """
    if isinstance(record, SendSignal | SendSignalIdempotent):
        return record.exec_id
    return None


def command_headers(text: str) -> dict[str, str] | None:
    """The headers a queued row's arguments carry, or None (most rows: no parse)."""
    if '"headers"' not in text:
        return None
    args = payloads.loads(text)
    value = args.get(HEADERS_KEY) if isinstance(args, dict) else None
    if not isinstance(value, dict):
        return None
    return {str(k): str(v) for k, v in value.items()}


def encode_error(exc: BaseException) -> dict[str, Any]:
    """The JSON form of an error a command raised."""
    if isinstance(exc, HarvestError):
        fields_ = json.loads(json.dumps(exc._fields, default=str))
        return {"type": type(exc).__name__, "message": exc.message, "fields": fields_}
    return {"type": type(exc).__name__, "message": str(exc), "fields": {}}


def decode_error(data: Any) -> Exception:
    """The error a reply carries, as the class the serving process raised."""
    if not isinstance(data, dict):
        return HarvestInternalError(f"a command reply held no readable error: {data!r}")
    name = str(data.get("type", ""))
    message = str(data.get("message", ""))
    fields_ = data.get("fields") if isinstance(data.get("fields"), dict) else {}
    cls = getattr(errors, name, None)
    if isinstance(cls, type) and issubclass(cls, HarvestError):
        return errors._rebuild(cls, message, dict(fields_ or {}))
    builtin = _BUILTIN_ERRORS.get(name)
    if builtin is not None:
        return builtin(message)
    return HarvestInternalError(f"the serving process raised {name}: {message}")


def ok_reply(record: Command, value: Any) -> str:
    """The reply row of a command that succeeded."""
    return payloads.dumps({"ok": record.encode_result(value)})


def error_reply(exc: BaseException) -> str:
    """The reply row of a command that raised."""
    return payloads.dumps({"error": encode_error(exc)})


def is_refusal(text: str | None) -> bool:
    """Whether a reply row carries an error (the command was refused and changed nothing)."""
    try:
        data = payloads.loads(text or "")
    except ValueError:
        return False
    return isinstance(data, dict) and "error" in data


def read_reply(record: type[Command], text: str | None) -> Any:
    """The result a reply row carries, or raise the error it carries."""
    try:
        data = payloads.loads(text or "")
    except ValueError:
        data = None
    if isinstance(data, dict) and "error" in data:
        raise decode_error(data["error"])
    if not isinstance(data, dict) or "ok" not in data:
        raise HarvestInternalError(f"a command reply is not readable: {text!r}")
    return record.decode_result(data["ok"])
