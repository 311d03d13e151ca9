"""Updates: a request with a result, recorded as UpdateAdmitted + UpdateCompleted/UpdateFailed.

`update()` takes the write transaction, replays the run in a fresh instance
(its handlers see a pending cancel), checks the input against the handler's
annotation (`UpdateInputInvalid`), runs the validator (`UpdateRejected`),
then the handler, and appends `UpdateAdmitted` and `UpdateCompleted` (or
`UpdateFailed`) in that one transaction. A rejection, an invalid
input or a timeout writes nothing.

The handler runs once, on that separate replay: state it writes does not
reach the workflow body, and a later replay meets the two events as passive
history and never runs the handler again. The update does not drive the
run: it sets no decision flag; drive the run afterwards as after a signal.
The handler may await any future of the run's loop within 5 seconds, but
not a durable command (an activity, a timer): that is `UpdateTimedOut`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.activity import storable_details
from harvest_engine.errors import (
    ApplicationError,
    ExecutionNotFound,
    HarvestError,
    PayloadInvalid,
    PayloadTooDeep,
    PayloadTooLarge,
    UpdateFailed,
    UpdateHistoryCapReached,
    UpdateInputInvalid,
    UpdateRejected,
    UpdateTimedOut,
    WorkflowNotRunning,
)
from harvest_engine.events import HistoryEvent
from harvest_engine.names import check_name
from harvest_engine.runtime.deciding import cancel
from harvest_engine.runtime.schema import schema_problem
from harvest_engine.runtime.settings import HistoryCapReached
from harvest_engine.runtime.talking import hooked
from harvest_engine.runtime.talking.frontier import (
    ReplayBroke,
    describe_error,
    first_param_type,
    replay,
)
from harvest_engine.runtime.talking.signals import require_running
from harvest_engine.states import ErrorInfo
from harvest_engine.tracebacks import stack_trace

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.runtime.engine import Engine
    from harvest_engine.store.rows import ExecutionRecord
    from harvest_engine.workflow.instance import WorkflowInstance

# API.md "update handler time limit".
UPDATE_TIME_LIMIT_SECONDS = 5.0


@dataclass(frozen=True)
class _Handler:
    """The update handler a replay found, and the type its input must fit."""

    validate: Callable[[Any], Any] | None
    run: Callable[[Any], Any]
    input_type: Any


async def update(engine: Engine, exec_id: str, name: str, arg: Any) -> Any:
    """Run update `name(arg)` on the run; its JSON result (see the module docstring)."""
    return run_update(engine, exec_id, name, arg)


def run_update(engine: Engine, exec_id: str, name: str, arg: Any) -> Any:
    """The update, synchronously, through the interceptors' update hooks."""
    return hooked.update(
        engine,
        exec_id,
        name,
        arg,
        lambda name, arg: _run_update(engine, exec_id, name, arg),
    )


def _run_update(engine: Engine, exec_id: str, name: str, arg: Any) -> Any:
    """The update, synchronously: one write transaction, or nothing written."""
    if not isinstance(name, str) or not name.strip():
        raise UpdateRejected(
            name=repr(name)[:80], reason="an update name is non-empty text"
        )
    check_name(name, "update name")
    value, _ = payloads.checked(arg, "update input")
    now = engine.clock.now()
    try:
        with engine.store.write() as txn:
            row = txn.execution(exec_id)
            if row is None:
                raise ExecutionNotFound(exec_id=exec_id)
            require_running(row, now)
            if row.state != "RUNNING":  # ENQUEUED: no handler runs before its body
                raise WorkflowNotRunning(exec_id=exec_id, state=row.state)
            # A paused run answers too: the handler runs on its own replay and
            # sets no decision flag, so the body meets the two events as passive
            # history when it is unpaused (the guide's section 8).
            info = engine.registry.workflow(row.workflow_name)
            try:
                instance = replay(row, txn.load_events(exec_id), info, now)
            except ReplayBroke as broke:
                raise UpdateFailed(
                    name=name,
                    error=f"the run's replay raised {broke}; nothing was recorded",
                ) from broke.error
            try:
                outcome = _admit(engine, instance, row, name, value, now)
            finally:
                instance.close()
            update_id = uuid.uuid4().hex
            admitted = HistoryEvent(
                seq=row.next_seq,
                type="UpdateAdmitted",
                at=now,
                attrs={"update_id": update_id, "name": name, "input": value},
            )
            if isinstance(outcome, ErrorInfo):
                ending = HistoryEvent(
                    seq=row.next_seq + 1,
                    type="UpdateFailed",
                    at=now,
                    attrs={
                        "update_id": update_id,
                        "name": name,
                        "error": outcome.to_json(),
                    },
                )
            else:
                ending = HistoryEvent(
                    seq=row.next_seq + 1,
                    type="UpdateCompleted",
                    at=now,
                    attrs={
                        "update_id": update_id,
                        "name": name,
                        "result": outcome.value,
                    },
                )
            engine.settings.check_caps(row, [admitted, ending], None)
            if cancel.budget_reached(row, 2):
                raise cancel.CleanupBudgetReached(exec_id)
            txn.append_events(exec_id, [admitted, ending])
    except (HistoryCapReached, cancel.CleanupBudgetReached) as cap:
        # The transaction rolled back; the run ends at the cap as a drive
        # would end it (the decider's own seals), and no update event stays:
        # CANCELLED when a cancel is pending (guide §7 "Both paths": a cap or
        # the cleanup budget, which acts as one more event cap), else FAILED
        # with the cap's reason.
        engine.cache.evict(exec_id)
        decider = engine.decider
        if decider.after_rollback.cancel_instead(exec_id, now) is None and isinstance(
            cap, HistoryCapReached
        ):
            decider.after_rollback.seal_at_cap(exec_id, cap.reason, now)
        raise UpdateHistoryCapReached(name=name, exec_id=exec_id) from None
    if isinstance(outcome, ErrorInfo):
        raise UpdateFailed(name=name, error=outcome.message)
    return outcome.value


@dataclass(frozen=True)
class _Result:
    value: Any


def _admit(
    engine: Engine,
    instance: WorkflowInstance,
    row: ExecutionRecord,
    name: str,
    value: Any,
    now: datetime,
) -> _Result | ErrorInfo:
    """Schema, validator and handler on the replayed instance: the result or the failure.

    Raises (writing nothing) UpdateRejected, UpdateInputInvalid, UpdateTimedOut.
    """
    handler = _find(engine, instance, row, name)
    problem = schema_problem(value, handler.input_type)
    if problem is not None:
        raise UpdateInputInvalid(name=name, reason=problem)
    try:
        converted = payloads.from_json(value, handler.input_type, "update input")
    except PayloadInvalid:
        raise
    except (TypeError, ValueError) as exc:
        raise UpdateInputInvalid(name=name, reason=str(exc)) from exc
    if handler.validate is not None:
        _validate(instance, name, handler.validate, converted)
    started = engine.clock.now()
    violation_before = instance.violation
    try:
        task = instance.run_handler(lambda: handler.run(converted))
    except Exception as exc:  # noqa: BLE001 - raised on the run's loop: the handler panicked
        return _failure(exc)
    if instance.pending_commands:
        command = instance.pending_commands[0]
        raise UpdateTimedOut(
            name=name,
            reason=f"the handler led to the durable command {command.type}; an update "
            "handler cannot await activities, timers or other durable commands",
        )
    if not task.done():
        task.cancel()
        raise UpdateTimedOut(
            name=name,
            reason="the handler waits on something no replay resolves (a signal, or a "
            "future only the workflow body would set)",
        )
    _check_time(engine, row, name, started)
    if instance.violation is not None and instance.violation is not violation_before:
        return _failure(instance.violation)
    error = task.exception()
    if error is not None:
        return _failure(error)
    try:
        result, _ = payloads.checked(task.result(), "update result")
    except (PayloadTooDeep, PayloadTooLarge) as exc:
        return _failure(exc)
    except (TypeError, ValueError) as exc:
        return ErrorInfo(
            type="TypeError", message=f"the update result is not JSON: {exc}"
        )
    return _Result(result)


def _find(
    engine: Engine, instance: WorkflowInstance, row: ExecutionRecord, name: str
) -> _Handler:
    """The body's handler (it wins), else the declarative one; UpdateRejected when neither."""
    body = instance.updates.get(name)
    if body is not None:
        validate, run = body
        hint = first_param_type(run)
        if hint is None and validate is not None:
            hint = first_param_type(validate)
        return _Handler(validate=validate, run=run, input_type=hint)
    declared = engine.registry.updates.get((row.workflow_name, name))
    if declared is not None:
        ctx = instance.ctx
        fn = declared.fn
        return _Handler(
            validate=None, run=lambda arg: fn(ctx, arg), input_type=declared.input_type
        )
    known = sorted(
        set(instance.updates)
        | {n for (w, n) in engine.registry.updates if w == row.workflow_name}
    )
    raise UpdateRejected(
        name=name,
        reason=f"run {row.exec_id} has no update handler {name!r} "
        f"(known: {', '.join(known) or 'none'})",
    )


def _validate(
    instance: WorkflowInstance, name: str, validate: Callable[[Any], Any], arg: Any
) -> None:
    """Run the validator on the run's loop; any raise (or a wait) rejects the update."""
    before = instance.violation
    try:
        task = instance.run_handler(lambda: validate(arg))
    except Exception as exc:
        raise UpdateRejected(name=name, reason=describe_error(exc)) from exc
    if instance.violation is not None and instance.violation is not before:
        raise UpdateRejected(name=name, reason=describe_error(instance.violation))
    if not task.done():
        task.cancel()
        raise UpdateRejected(name=name, reason="the validator must not wait")
    error = task.exception()
    if error is not None:
        reason = error.message if isinstance(error, HarvestError) else str(error)
        raise UpdateRejected(
            name=name, reason=reason or type(error).__name__
        ) from error


def _check_time(
    engine: Engine, row: ExecutionRecord, name: str, started: datetime
) -> None:
    """UpdateTimedOut past the 5 s limit, or past the run's execution deadline."""
    finished = engine.clock.now()
    elapsed = (finished - started).total_seconds()
    if elapsed > UPDATE_TIME_LIMIT_SECONDS:
        raise UpdateTimedOut(
            name=name,
            reason=f"the handler ran {elapsed:.3f}s, past the {UPDATE_TIME_LIMIT_SECONDS:g}s limit",
        )
    if row.deadline is not None and finished >= row.deadline:
        raise UpdateTimedOut(name=name, reason="the run's execution deadline passed")


def _failure(error: BaseException) -> ErrorInfo:
    """The UpdateFailed record of a handler's error, with the handler's traceback."""
    trace = stack_trace(error)
    if isinstance(error, ApplicationError):
        message, details = storable_details(error)
        return ErrorInfo(
            type=str(error.type),
            message=message,
            non_retryable=bool(error.non_retryable),
            details=details,
            stack_trace=trace,
        )
    if isinstance(error, HarvestError):
        return ErrorInfo(
            type=type(error).__name__,
            message=error.message,
            non_retryable=True,
            stack_trace=trace,
        )
    return ErrorInfo(
        type=type(error).__name__, message=describe_error(error), stack_trace=trace
    )
