"""What each client command record asks of the runtime: the call an in-process caller makes."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from harvest_engine import wire, wire_repairs
from harvest_engine.calls import (
    SignalWithStart,
    StartOptions,
    UpdateWithStart,
    WorkflowIdReusePolicy,
)
from harvest_engine.runtime.operating import operate
from harvest_engine.runtime.repairing import commands as repairs
from harvest_engine.runtime.talking import hooked, queries, talk, updates
from harvest_engine.runtime.talking.update_with_start import update_with_start
from harvest_engine.schedules import Schedule, WorkflowSchedule

if TYPE_CHECKING:
    from harvest_engine.runtime.engine import Engine


def run(engine: Engine, record: wire.Command) -> Any:  # noqa: PLR0911 - one return per kind
    """The runtime call a command record asks for, as an in-process caller makes it."""
    if isinstance(record, wire_repairs.REPAIR_COMMANDS):
        return repairs.run(engine, record)
    match record:
        case wire.StartWorkflow():
            return talk.start_workflow(engine, record.name, record.input)
        case wire.StartWorkflowWithId():
            return talk.start_workflow_with_id(
                engine, record.name, record.workflow_id, record.input
            )
        case wire.StartWorkflowWithReusePolicy():
            return talk.start_workflow_with_reuse_policy(
                engine,
                record.name,
                record.workflow_id,
                record.input,
                WorkflowIdReusePolicy.coerce(record.reuse_policy),
            )
        case wire.StartWorkflowWithOptions():
            options = StartOptions(
                workflow_id=record.workflow_id,
                memo=record.memo,
                search_attributes=record.search_attributes or {},
                reuse_policy=WorkflowIdReusePolicy.coerce(record.reuse_policy),
                summary=record.summary,
                details=record.details,
                queue=record.queue,
                priority=record.priority,
                partition_key=record.partition_key,
                dedup_id=record.dedup_id,
                start_delay=record.start_delay,
            )
            return talk.start_workflow_with_options(
                engine, record.name, record.input, options
            )
        case wire.SignalWithStartCommand():
            return talk.signal_with_start(
                engine,
                SignalWithStart(
                    workflow_name=record.workflow_name,
                    workflow_id=record.workflow_id,
                    input=record.input,
                    reuse_policy=WorkflowIdReusePolicy.coerce(record.reuse_policy),
                    signal_name=record.signal_name,
                    signal_payload=record.signal_payload,
                    idempotency_key=record.idempotency_key,
                ),
            )
        case wire.SendSignal():
            return talk.send_signal(engine, record.exec_id, record.name, record.payload)
        case wire.SendSignalIdempotent():
            return talk.send_signal_idempotent(
                engine, record.exec_id, record.name, record.payload, record.key
            )
        case wire.SendSignalByWorkflowId():
            return talk.send_signal_by_workflow_id(
                engine,
                record.workflow_name,
                record.workflow_id,
                record.name,
                record.payload,
                record.key,
            )
        case wire.Cancel():
            return operate.cancel(engine, record.exec_id, record.reason or "")
        case wire.Terminate():
            return operate.terminate(engine, record.exec_id, record.reason or "")
        case wire.Query():
            snapshot = queries.take_snapshot(engine, engine.require(record.exec_id))
            hooks = engine.registry.interceptors.query
            return queries.hooked_answer(
                hooks, snapshot, engine.clock, record.name, record.arg
            )
        case wire.Update():
            exec_id = engine.require(record.exec_id)
            return updates.run_update(engine, exec_id, record.name, record.arg)
        case wire.UpsertSchedule():
            return operate.upsert_schedule(
                engine,
                WorkflowSchedule(
                    record.workflow_name,
                    Schedule.from_json(record.schedule),
                    input=record.input,
                    max_active_runs=record.max_active_runs,
                    overlap=record.overlap,
                ),
            )
        case wire.PauseSchedule():
            return operate.pause_schedule(engine, record.workflow_name)
        case wire.ResumeSchedule():
            return operate.resume_schedule(engine, record.workflow_name)
        case wire.DeleteSchedule():
            return operate.delete_schedule(engine, record.workflow_name)
        case wire.TriggerSchedule():
            return operate.trigger_schedule(engine, record.workflow_name)
        case wire.BackfillSchedule():
            return operate.backfill_schedule(
                engine,
                record.workflow_name,
                datetime.fromisoformat(record.start),
                datetime.fromisoformat(record.end),
            )
        case wire.UpdateWithStartCommand():
            request = UpdateWithStart(
                workflow_name=record.workflow_name,
                workflow_id=record.workflow_id,
                input=record.input,
                update_name=record.update_name,
                update_arg=record.update_arg,
                reuse_policy=WorkflowIdReusePolicy.coerce(record.reuse_policy),
            )
            return hooked.start(
                engine,
                request.workflow_name,
                request.workflow_id,
                request.input,
                lambda: update_with_start(engine, request),
            )
    raise ValueError(f"unknown client command {record.KIND!r}")
