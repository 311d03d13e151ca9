"""A client command as its `wire` record, checked before anything is written.

Every check an in-process call makes without the workflow code runs here:
the payload caps, blank ids and names, reserved signal keys, reuse policy
names, argument types. So a bad command raises the same typed error as the
in-process call and queues nothing. What needs the code or the file (an
unknown workflow or run) is answered by the serving process.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from harvest_engine import calls, payloads, wire
from harvest_engine.calls import (
    SignalWithStart,
    StartOptions,
    UpdateWithStart,
    WorkflowIdReusePolicy,
    check_request,
    check_signal,
    check_workflow_id,
    encoded_payload,
)
from harvest_engine.errors import ExecutionNotFound, InvalidName, UpdateRejected
from harvest_engine.names import check_name
from harvest_engine.schedules import WorkflowSchedule
from harvest_engine.shaping import MAX_INPUT_BYTES_CEILING

if TYPE_CHECKING:
    from harvest_engine.states import ExecutionId


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
    # The workflow's own cap (`max_input_bytes`) is the serving process's check.
    calls.checked_input(value, MAX_INPUT_BYTES_CEILING)
    return payloads.to_json(value)


def _workflow_id(value: Any) -> str:
    return check_name(value, "workflow id")


def start(name: str, input: Any) -> wire.StartWorkflow:
    """start_workflow."""
    return wire.StartWorkflow(_name(name, "a workflow name"), _input(input))


def start_with_id(name: str, workflow_id: str, input: Any) -> wire.StartWorkflowWithId:
    """start_workflow_with_id."""
    plain = start(name, input)  # the name and the input first, as in-process
    return wire.StartWorkflowWithId(plain.name, _workflow_id(workflow_id), plain.input)


def start_with_policy(
    name: str, workflow_id: str, input: Any, policy: WorkflowIdReusePolicy | str
) -> wire.StartWorkflowWithReusePolicy:
    """start_workflow_with_reuse_policy."""
    plain = start_with_id(name, workflow_id, input)
    return wire.StartWorkflowWithReusePolicy(
        plain.name,
        plain.workflow_id,
        plain.input,
        WorkflowIdReusePolicy.coerce(policy).name,
    )


def start_with_options(
    name: str, input: Any, options: StartOptions
) -> wire.StartWorkflowWithOptions:
    """start_workflow_with_options: memo and search attributes are checked too."""
    if not isinstance(options, StartOptions):
        raise TypeError(
            f"start_workflow_with_options needs StartOptions, got {options!r}"
        )
    calls.checked_memo(options.memo)
    calls.checked_search_attributes(options.search_attributes)
    summary = calls.checked_label(options.summary, "summary")
    details = calls.checked_label(options.details, "details")
    flow = options.flow  # checked here too: a bad priority is refused before writing
    plain = start(name, input)
    workflow_id = options.workflow_id
    return wire.StartWorkflowWithOptions(
        plain.name,
        plain.input,
        workflow_id=None if workflow_id is None else _workflow_id(workflow_id),
        memo=payloads.to_json(options.memo),
        search_attributes=payloads.to_json(dict(options.search_attributes)),
        reuse_policy=WorkflowIdReusePolicy.coerce(options.reuse_policy).name,
        summary=summary,
        details=details,
        queue=None if flow is None else flow.queue,
        priority=None if flow is None else flow.priority,
        partition_key=None if flow is None else flow.partition_key,
        dedup_id=None if flow is None else flow.dedup_id,
        start_delay=None
        if flow is None or not flow.delay_seconds
        else flow.delay_seconds,
    )


def signal_with_start(request: SignalWithStart) -> wire.SignalWithStartCommand:
    """signal_with_start (the input cap applies as if a run starts)."""
    if not isinstance(request, SignalWithStart):
        raise TypeError(f"signal_with_start needs a SignalWithStart, got {request!r}")
    policy = WorkflowIdReusePolicy.coerce(request.reuse_policy)
    workflow_id = check_workflow_id(request.workflow_id)
    key = check_signal(request.signal_name, request.idempotency_key)
    encoded_payload(request.signal_payload)
    return wire.SignalWithStartCommand(
        workflow_name=_name(request.workflow_name, "a workflow name"),
        workflow_id=workflow_id,
        signal_name=request.signal_name,
        input=_input(request.input),
        reuse_policy=policy.name,
        signal_payload=payloads.to_json(request.signal_payload),
        idempotency_key=key,
    )


def signal(run: str | ExecutionId, name: str, payload: Any) -> wire.SendSignal:
    """send_signal."""
    check_signal(name, None)
    encoded_payload(payload)
    return wire.SendSignal(exec_id(run), name, payloads.to_json(payload))


def signal_idempotent(
    run: str | ExecutionId, name: str, payload: Any, key: str | None
) -> wire.SendSignalIdempotent:
    """send_signal_idempotent."""
    checked = check_signal(name, key)
    encoded_payload(payload)
    return wire.SendSignalIdempotent(
        exec_id(run), name, payloads.to_json(payload), checked
    )


def signal_by_workflow_id(
    workflow_name: str, workflow_id: str, name: str, payload: Any, key: str | None
) -> wire.SendSignalByWorkflowId:
    """send_signal_by_workflow_id."""
    wid = check_workflow_id(workflow_id)
    checked = check_signal(name, key)
    encoded_payload(payload)
    return wire.SendSignalByWorkflowId(
        _name(workflow_name, "a workflow name"),
        wid,
        name,
        payloads.to_json(payload),
        checked,
    )


def ending(run: str | ExecutionId, reason: str | None) -> tuple[str, str | None]:
    """Cancel / terminate: the run's id and the checked reason."""
    if reason is not None and not isinstance(reason, str):
        raise TypeError(
            f"a cancel or terminate reason is text or None, got {type(reason).__name__}"
        )
    if reason is not None:
        payloads.check_value(reason, "reason")
    return exec_id(run), reason


def query(run: str | ExecutionId, name: str, arg: Any) -> wire.Query:
    """query: the argument must be JSON within the payload caps."""
    value = payloads.to_json(arg)
    payloads.check(value, "query argument")
    return wire.Query(exec_id(run), _name(name, "a query name"), value)


def update(run: str | ExecutionId, name: str, arg: Any) -> wire.Update:
    """update: a blank name is UpdateRejected, the input is capped."""
    if not isinstance(name, str) or not name.strip():
        raise UpdateRejected(
            name=repr(name)[:80], reason="an update name is non-empty text"
        )
    check_name(name, "update name")
    value = payloads.to_json(arg)
    payloads.check(value, "update input")
    return wire.Update(exec_id(run), name, value)


def update_with_start(request: UpdateWithStart) -> wire.UpdateWithStartCommand:
    """update_with_start."""
    check_request(request)
    return wire.UpdateWithStartCommand(
        workflow_name=_name(request.workflow_name, "a workflow name"),
        workflow_id=request.workflow_id,
        update_name=request.update_name,
        input=payloads.to_json(request.input),
        update_arg=payloads.to_json(request.update_arg),
        reuse_policy=WorkflowIdReusePolicy.coerce(request.reuse_policy).name,
    )


def schedule_name(value: Any) -> str:
    """A schedule's key (its workflow name): non-blank text within the name cap."""
    name = _name(value, "a workflow name")
    if not name.strip():
        raise InvalidName(what="workflow name", reason="it is blank")
    return name


def upsert_schedule(schedule: WorkflowSchedule) -> wire.UpsertSchedule:
    """upsert_schedule: a WorkflowSchedule (checked when it was made) with a JSON input."""
    if not isinstance(schedule, WorkflowSchedule):
        raise TypeError(f"upsert_schedule takes a WorkflowSchedule, got {schedule!r}")
    value = payloads.to_json(schedule.input)
    payloads.check(value, "schedule input")
    return wire.UpsertSchedule(
        workflow_name=schedule_name(schedule.workflow_name),
        schedule=schedule.schedule.to_json(),
        input=value,
        max_active_runs=schedule.max_active_runs,
        overlap=str(schedule.overlap),
    )


def backfill_schedule(
    name: str, start: datetime, end: datetime
) -> wire.BackfillSchedule:
    """backfill_schedule: aware times, `end` not before `start` (the slots are the server's)."""
    for what, when in (("start", start), ("end", end)):
        if not isinstance(when, datetime) or when.tzinfo is None:
            raise ValueError(
                f"backfill_schedule {what} is an aware datetime, got {when!r}"
            )
    if end < start:
        raise ValueError("backfill_schedule end is before its start")
    return wire.BackfillSchedule(
        schedule_name(name), start.isoformat(), end.isoformat()
    )
