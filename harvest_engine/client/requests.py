"""A client command's arguments as JSON, checked before anything is written.

Every check an in-process call makes without the workflow code runs here:
the payload caps, blank ids and names, reserved signal keys, reuse policy
names, argument types. So a bad command raises the same typed error as the
in-process call and queues nothing. What needs the code or the file (an
unknown workflow or run) is answered by the serving process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import ExecutionNotFound, InvalidName, UpdateRejected
from harvest_engine.names import check_name
from harvest_engine.runtime import start_inputs
from harvest_engine.runtime.talking.signal_with_start import SignalWithStart
from harvest_engine.runtime.talking.signals import (
    check_signal,
    check_workflow_id,
    encoded_payload,
)
from harvest_engine.runtime.talking.starts import StartOptions, WorkflowIdReusePolicy
from harvest_engine.runtime.talking.update_with_start import (
    UpdateWithStart,
    check_request,
)

if TYPE_CHECKING:
    from harvest_engine.states import ExecutionId

Args = dict[str, Any]


def exec_id(value: str | ExecutionId) -> str:
    """The run's id as text; ExecutionNotFound for a blank one, as in-process."""
    text = str(value).strip() if value is not None else ""
    if not text:
        raise ExecutionNotFound(exec_id=str(value))
    return text


def command_id(value: Any) -> str:
    """A caller's command id (the key of a retry): non-blank text within the name cap."""
    text = check_name(value, "command id")
    if not text.strip():
        raise InvalidName(what="command id", reason="it is blank")
    return text


def _name(value: Any, what: str) -> str:
    return check_name(value, what.removeprefix("a "))


def _input(value: Any) -> Any:
    start_inputs.checked_input(value)
    return payloads.to_json(value)


def _workflow_id(value: Any) -> str:
    return check_name(value, "workflow id")


def start(name: str, input: Any, workflow_id: str | None = None) -> Args:
    """start_workflow / start_workflow_with_id."""
    args: Args = {"name": _name(name, "a workflow name"), "input": _input(input)}
    if workflow_id is not None:
        args["workflow_id"] = _workflow_id(workflow_id)
    return args


def start_with_policy(
    name: str, workflow_id: str, input: Any, policy: WorkflowIdReusePolicy | str
) -> Args:
    """start_workflow_with_reuse_policy."""
    args = start(name, input, workflow_id)
    args["reuse_policy"] = WorkflowIdReusePolicy.coerce(policy).name
    return args


def start_with_options(name: str, input: Any, options: StartOptions) -> Args:
    """start_workflow_with_options: memo and search attributes are checked too."""
    if not isinstance(options, StartOptions):
        raise TypeError(
            f"start_workflow_with_options needs StartOptions, got {options!r}"
        )
    start_inputs.checked_memo(options.memo)
    start_inputs.checked_search_attributes(options.search_attributes)
    args = start(name, input)
    if options.workflow_id is not None:
        args["workflow_id"] = _workflow_id(options.workflow_id)
    args["memo"] = payloads.to_json(options.memo)
    args["search_attributes"] = payloads.to_json(dict(options.search_attributes))
    args["reuse_policy"] = WorkflowIdReusePolicy.coerce(options.reuse_policy).name
    return args


def signal_with_start(request: SignalWithStart) -> Args:
    """signal_with_start (the input cap applies as if a run starts)."""
    if not isinstance(request, SignalWithStart):
        raise TypeError(f"signal_with_start needs a SignalWithStart, got {request!r}")
    policy = WorkflowIdReusePolicy.coerce(request.reuse_policy)
    workflow_id = check_workflow_id(request.workflow_id)
    key = check_signal(request.signal_name, request.idempotency_key)
    encoded_payload(request.signal_payload)
    return {
        "workflow_name": _name(request.workflow_name, "a workflow name"),
        "workflow_id": workflow_id,
        "input": _input(request.input),
        "reuse_policy": policy.name,
        "signal_name": request.signal_name,
        "signal_payload": payloads.to_json(request.signal_payload),
        "idempotency_key": key,
    }


def signal(run: str | ExecutionId, name: str, payload: Any, key: str | None) -> Args:
    """send_signal / send_signal_idempotent."""
    checked = check_signal(name, key)
    encoded_payload(payload)
    return {
        "exec_id": exec_id(run),
        "name": name,
        "payload": payloads.to_json(payload),
        "key": checked,
    }


def signal_by_workflow_id(
    workflow_name: str, workflow_id: str, name: str, payload: Any, key: str | None
) -> Args:
    """send_signal_by_workflow_id."""
    wid = check_workflow_id(workflow_id)
    checked = check_signal(name, key)
    encoded_payload(payload)
    return {
        "workflow_name": _name(workflow_name, "a workflow name"),
        "workflow_id": wid,
        "name": name,
        "payload": payloads.to_json(payload),
        "key": checked,
    }


def ending(run: str | ExecutionId, reason: str | None) -> Args:
    """Cancel / terminate."""
    if reason is not None and not isinstance(reason, str):
        raise TypeError(
            f"a cancel or terminate reason is text or None, got {type(reason).__name__}"
        )
    if reason is not None:
        payloads.check_value(reason, "reason")
    return {"exec_id": exec_id(run), "reason": reason}


def query(run: str | ExecutionId, name: str, arg: Any) -> Args:
    """query: the argument must be JSON within the payload caps."""
    value = payloads.to_json(arg)
    payloads.check(value, "query argument")
    return {"exec_id": exec_id(run), "name": _name(name, "a query name"), "arg": value}


def update(run: str | ExecutionId, name: str, arg: Any) -> Args:
    """update: a blank name is UpdateRejected, the input is capped."""
    if not isinstance(name, str) or not name.strip():
        raise UpdateRejected(
            name=repr(name)[:80], reason="an update name is non-empty text"
        )
    check_name(name, "update name")
    value = payloads.to_json(arg)
    payloads.check(value, "update input")
    return {"exec_id": exec_id(run), "name": name, "arg": value}


def update_with_start(request: UpdateWithStart) -> Args:
    """update_with_start."""
    check_request(request)
    return {
        "workflow_name": _name(request.workflow_name, "a workflow name"),
        "workflow_id": request.workflow_id,
        "input": payloads.to_json(request.input),
        "update_name": request.update_name,
        "update_arg": payloads.to_json(request.update_arg),
        "reuse_policy": WorkflowIdReusePolicy.coerce(request.reuse_policy).name,
    }
