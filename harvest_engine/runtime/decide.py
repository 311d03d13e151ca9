"""One decision cycle of one run, in one write transaction (DESIGN "One decision = one transaction").

Take the write lock, check the deadline, replay (or feed the cached instance)
the stored history, append staged signals and fired timers, let the code
emit its commands, validate them, append events and projections, seal if
terminal, commit. Either all of it lands or none of it does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from harvest_engine import payloads
from harvest_engine.errors import (
    ApplicationError,
    ContinueAsNew,
    HarvestError,
    HarvestInternalError,
    NonDeterminismDetected,
    PayloadTooDeep,
    PayloadTooLarge,
    WorkflowPanicked,
)
from harvest_engine.events import HistoryEvent
from harvest_engine.runtime.cache import InstanceCache
from harvest_engine.runtime.registry import Registry
from harvest_engine.runtime.settings import HistoryCapReached, Settings
from harvest_engine.states import ErrorInfo, ExecutionId, RunState
from harvest_engine.store.protocol import (
    DurableStore,
    ExecutionRecord,
    NewExecution,
    NewTask,
    WriteTxn,
)
from harvest_engine.workflow.context import RunInfo
from harvest_engine.workflow.instance import WorkflowInstance, timer_fire_at

log = logging.getLogger("harvest.runtime")

PANIC_BUDGET = 3


@dataclass
class Decision:
    """What a cycle did: whether it appended anything, and where it left the run."""

    exec_id: str
    progressed: bool = False
    state: RunState | None = None
    waiting_signal: str | None = None
    waiting_timer: bool = False
    stuck: bool = False
    events: list[HistoryEvent] = field(default_factory=list)

    @property
    def terminal(self) -> bool:
        return self.state is not None and self.state.is_terminal


@dataclass
class _Cycle:
    """The mutable state of one cycle inside its transaction."""

    txn: WriteTxn
    row: ExecutionRecord
    now: datetime
    next_seq: int
    events: list[HistoryEvent] = field(default_factory=list)
    seal: tuple[str, dict[str, Any]] | None = None
    recorded: bool = False

    def event(self, type_: str, attrs: dict[str, Any]) -> HistoryEvent:
        event = HistoryEvent(seq=self.next_seq, type=type_, at=self.now, attrs=attrs)
        self.next_seq += 1
        self.events.append(event)
        return event

    def take(self, events: list[HistoryEvent]) -> None:
        self.events.extend(events)
        self.next_seq += len(events)


class Decider:
    """Runs decision cycles for the runtime."""

    def __init__(
        self, store: DurableStore, registry: Registry, cache: InstanceCache, settings: Settings
    ) -> None:
        self.store = store
        self.registry = registry
        self.cache = cache
        self.settings = settings

    def decide(self, exec_id: str, now: datetime) -> Decision:
        """One cycle; raises (and rolls back) on divergence, unknown names and panics."""
        try:
            with self.store.write() as txn:
                return self._cycle(txn, exec_id, now)
        except _Panic as panic:
            self.cache.evict(exec_id)
            return self._count_panic(exec_id, panic.error, now)
        except HistoryCapReached as cap:
            self.cache.evict(exec_id)
            return self._seal_at_cap(exec_id, cap.reason, now)
        except BaseException:
            self.cache.evict(exec_id)
            raise

    # -- the cycle ---------------------------------------------------------------

    def _cycle(self, txn: WriteTxn, exec_id: str, now: datetime) -> Decision:
        row = txn.execution(exec_id)
        if row is None:
            raise HarvestInternalError(f"decide() of unknown run {exec_id}")
        if row.state != "RUNNING":
            self.cache.evict(exec_id)
            return Decision(exec_id, state=terminal_state(row))
        if row.not_before is not None and now < row.not_before:
            return Decision(exec_id, waiting_timer=True)
        if row.deadline is not None and now >= row.deadline:
            return self._time_out(txn, row, now)
        info = self.registry.workflow(row.workflow_name)
        instance = self._instance(row, info)
        cycle = _Cycle(txn, row, now, row.next_seq)
        try:
            for event in txn.load_events(exec_id, instance.applied_seq):
                instance.feed(event)
            cycle.take(instance.flush(cycle.next_seq, now))
            self._deliver_inputs(cycle, instance)
        except (NonDeterminismDetected, HarvestInternalError):
            raise
        except Exception as exc:
            # Workflow code raised outside the body's task: a signal handler,
            # a condition predicate, an update validator. A bug, like a panic.
            raise _Panic(exc) from exc
        self._check_violation(instance)
        if instance.done:
            decision = self._finish(cycle, instance)
        else:
            decision = self._park(cycle, instance)
        if not cycle.recorded:
            self._record(cycle, instance)
        if decision.terminal:
            instance.close()
        else:
            self.cache.put(exec_id, instance)
        decision.events = cycle.events
        decision.progressed = bool(cycle.events)
        return decision

    def _instance(self, row: ExecutionRecord, info: Any) -> WorkflowInstance:
        cached = self.cache.take(row.exec_id)
        if cached is not None and cached.applied_seq < row.next_seq and cached.fn is info.fn:
            cached.cancel_reason = row.cancel_reason
            return cached
        if cached is not None:
            cached.close()
        return WorkflowInstance(
            info.fn,
            run_info(row),
            input_type=info.input_type,
            cancel_reason=row.cancel_reason,
        )

    def _deliver_inputs(self, cycle: _Cycle, instance: WorkflowInstance) -> None:
        """Staged signals and due timers, merged by arrival time, each followed by a flush."""
        txn, exec_id = cycle.txn, cycle.row.exec_id
        room = self.settings.signal_room(cycle.next_seq)
        signals = txn.staged_signals(exec_id, room)
        timers = [t for t in txn.due_timers(exec_id, cycle.now)]
        inputs: list[tuple[datetime, int, Any]] = [
            (s.received_at, 1, s) for s in signals
        ] + [(t.fire_at, 0, t) for t in timers]
        inputs.sort(key=lambda item: (item[0], item[1]))
        delivered: list[int] = []
        fired: list[str] = []
        for _, kind, item in inputs:
            if kind == 1:
                event = cycle.event(
                    "SignalReceived", {"name": item.name, "payload": item.payload.value}
                )
                delivered.append(item.signal_id)
            else:
                event = cycle.event("TimerFired", {"timer_id": item.timer_id})
                fired.append(item.timer_id)
            instance.deliver(event)
            cycle.take(instance.flush(cycle.next_seq, cycle.now))
        if delivered:
            txn.mark_signals_delivered(exec_id, delivered)
        if fired:
            txn.delete_timers(exec_id, fired)

    @staticmethod
    def _check_violation(instance: WorkflowInstance) -> None:
        if instance.violation is not None:
            raise _Panic(instance.violation)

    # -- endings -----------------------------------------------------------------

    def _finish(self, cycle: _Cycle, instance: WorkflowInstance) -> Decision:
        row = cycle.row
        kind, value = instance.outcome()
        if kind == "completed":
            try:
                output = payloads.check(value, "workflow result")
            except (PayloadTooDeep, PayloadTooLarge) as exc:
                return self._fail(cycle, _failure(exc, non_retryable=True))
            cycle.event("WorkflowCompleted", {"output": value})
            self._seal(cycle, "COMPLETED", output=output)
            return Decision(row.exec_id, state=RunState.Completed(output=value))
        if isinstance(value, ContinueAsNew):
            return self._continue_as_new(cycle, value, instance)
        if isinstance(value, (ApplicationError, PayloadTooDeep, PayloadTooLarge)):
            return self._fail(cycle, _failure(value))
        raise _Panic(value)

    def _fail(self, cycle: _Cycle, error: ErrorInfo) -> Decision:
        cycle.event("WorkflowFailed", {"error": error.to_json()})
        self._seal(cycle, "FAILED", error=payloads.dumps(error.to_json()))
        return Decision(cycle.row.exec_id, state=RunState.Failed(error=error))

    def _continue_as_new(
        self, cycle: _Cycle, request: ContinueAsNew, instance: WorkflowInstance
    ) -> Decision:
        row = cycle.row
        successor = str(ExecutionId.new())
        cycle.event("WorkflowContinuedAsNew", {"input": request.input, "successor": successor})
        self._seal(cycle, "CONTINUED_AS_NEW")
        # The backlog this hand-off did not replay moves before the seal,
        # which would drop (unkeyed) or retire (keyed) it: each signal
        # arrives exactly once (guide §7).
        cycle.txn.move_staged_signals(row.exec_id, successor)  # type: ignore[attr-defined]
        self._record(cycle, instance)
        cycle.txn.update_execution(row.exec_id, successor=successor)
        start_run(
            cycle.txn,
            NewExecution(
                exec_id=successor,
                workflow_name=row.workflow_name,
                workflow_id=row.workflow_id,
                input=payloads.dumps(request.input),
                predecessor=row.exec_id,
                memo=row.memo,
                search_attributes=row.search_attributes,
                deadline=self._deadline(row.workflow_name, cycle.now),
            ),
            cycle.now,
        )
        return Decision(row.exec_id, state=RunState.ContinuedAsNew(next=ExecutionId(successor)))

    def _deadline(self, workflow_name: str, now: datetime) -> datetime | None:
        info = self.registry.workflows.get(workflow_name)
        if info is None or info.execution_timeout is None:
            return None
        return now + info.execution_timeout

    def _time_out(self, txn: WriteTxn, row: ExecutionRecord, now: datetime) -> Decision:
        cycle = _Cycle(txn, row, now, row.next_seq)
        error = ErrorInfo(
            type="WorkflowExecutionTimeout",
            message=f"timeout: WorkflowExecution for {row.workflow_name}",
            non_retryable=True,
        )
        cycle.event("WorkflowExecutionTimedOut", {"error": error.to_json()})
        txn.append_events(row.exec_id, cycle.events)
        txn.seal(row.exec_id, "TIMED_OUT", closed_at=now, error=payloads.dumps(error.to_json()))
        self.cache.evict(row.exec_id)
        return Decision(row.exec_id, progressed=True, state=RunState.TimedOut(error=error))

    @staticmethod
    def _seal(cycle: _Cycle, state: str, **values: Any) -> None:
        """Seal the run once the cycle's events and projections are written."""
        cycle.seal = (state, values)

    # -- a parked run --------------------------------------------------------------

    def _park(self, cycle: _Cycle, instance: WorkflowInstance) -> Decision:
        decision = Decision(cycle.row.exec_id)
        names = instance.signals.waiting_names()
        if names:
            decision.waiting_signal = names[0]
        elif instance.waiting_timer_ids() or instance.waiting_activity_ids():
            decision.waiting_timer = bool(instance.waiting_timer_ids())
        elif not cycle.events:
            decision.stuck = True
        else:
            decision.stuck = not instance.waiting_activity_ids()
        return decision

    # -- projections -----------------------------------------------------------------

    def _record(self, cycle: _Cycle, instance: WorkflowInstance | None) -> None:
        """Append the cycle's events, derive the projection rows, seal if it ended."""
        txn, row = cycle.txn, cycle.row
        exec_id = row.exec_id
        cycle.recorded = True
        if instance is not None:
            self.settings.check_caps(row, cycle.events, cycle.seal)
        for event in cycle.events:
            self._project(txn, row, event, cycle.now)
        txn.append_events(exec_id, cycle.events)
        txn.update_execution(exec_id, needs_decision=0, panic_count=0)
        lines = [] if instance is None else instance.take_log_lines()
        policy = self.settings.log_policy
        if lines and policy is not None:
            txn.append_log_lines(exec_id, lines, policy.max_lines)
        if cycle.seal is not None:
            state, values = cycle.seal
            txn.seal(exec_id, state, closed_at=cycle.now, **values)

    def _project(self, txn: WriteTxn, row: ExecutionRecord, event: HistoryEvent, now: datetime) -> None:
        attrs = event.attrs
        if event.type == "ActivityScheduled":
            txn.add_task(self._task(row, attrs, now))
        elif event.type == "TimerStarted":
            txn.add_timer(row.exec_id, str(attrs["timer_id"]), timer_fire_at(attrs))
        elif event.type == "TimerCancelled":
            txn.delete_timers(row.exec_id, [str(attrs["timer_id"])])
        elif event.type == "SearchAttributesUpserted":
            current = payloads.loads(row.search_attributes) if row.search_attributes else {}
            if not isinstance(current, dict):
                current = {}
            current.update(attrs.get("attributes") or {})
            txn.update_execution(row.exec_id, search_attributes=payloads.dumps(current))

    def _task(self, row: ExecutionRecord, attrs: dict[str, Any], now: datetime) -> NewTask:
        activity = self.registry.activity(str(attrs["name"]))
        retry = attrs.get("retry")
        if retry is None and activity.retry is not None:
            retry = activity.retry.to_json()
        max_attempts = activity.max_attempts if retry is None else int(retry["max_attempts"])
        start_to_close = attrs.get("start_to_close", activity.start_to_close)
        schedule_to_close = attrs.get("schedule_to_close", activity.schedule_to_close)
        return NewTask(
            exec_id=row.exec_id,
            activity_id=int(attrs["activity_id"]),
            activity_name=activity.name,
            input=payloads.dumps(attrs.get("input")),
            queue=str(attrs.get("queue") or activity.queue),
            max_attempts=max_attempts,
            ready_at=now,
            retry_policy=None if retry is None else payloads.dumps(retry),
            start_to_close=start_to_close,
            schedule_to_close_at=None
            if schedule_to_close is None
            else now + timedelta(seconds=float(schedule_to_close)),
            idempotency_key=f"{row.exec_id}:{attrs['activity_id']}",
        )

    def _seal_at_cap(self, exec_id: str, reason: dict[str, Any], now: datetime) -> Decision:
        """The rolled-back decision reached a cap: fail the run with the typed reason."""
        info = ErrorInfo(
            type="HistoryCapReached", message=payloads.dumps(reason), non_retryable=True,
            details=reason,
        )
        with self.store.write() as txn:
            row = txn.execution(exec_id)
            if row is None:
                raise HarvestInternalError(f"cap seal of a run that is gone: {exec_id}")
            event = HistoryEvent(
                seq=row.next_seq, type="WorkflowFailed", at=now, attrs={"error": info.to_json()}
            )
            txn.append_events(exec_id, [event])
            txn.seal(exec_id, "FAILED", closed_at=now, error=payloads.dumps(info.to_json()))
        return Decision(exec_id, progressed=True, state=RunState.Failed(error=info))

    # -- panics ------------------------------------------------------------------------

    def _count_panic(self, exec_id: str, error: BaseException, now: datetime) -> Decision:
        """A bug in the code: the cycle rolled back; count it, seal FAILED at the budget."""
        with self.store.write() as txn:
            row = txn.execution(exec_id)
            if row is None or row.state != "RUNNING":
                raise HarvestInternalError(f"panic bookkeeping for a run that is gone: {exec_id}")
            count = row.panic_count + 1
            if count < PANIC_BUDGET:
                txn.update_execution(exec_id, panic_count=count)
            else:
                info = ErrorInfo(
                    type="Panic",
                    message=f"workflow code raised {type(error).__name__}: {error} "
                    f"({count} cycles in a row)",
                    non_retryable=True,
                )
                event = HistoryEvent(
                    seq=row.next_seq, type="WorkflowFailed", at=now,
                    attrs={"error": info.to_json()},
                )
                txn.append_events(exec_id, [event])
                txn.seal(exec_id, "FAILED", closed_at=now, error=payloads.dumps(info.to_json()))
                return Decision(exec_id, progressed=True, state=RunState.Failed(error=info))
        raise WorkflowPanicked(
            exec_id=exec_id,
            error=f"{type(error).__name__}: {error}",
            count=count,
            budget=PANIC_BUDGET,
        ) from error


class _Panic(Exception):
    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def start_run(txn: WriteTxn, new: NewExecution, now: datetime) -> None:
    """Insert a run with its WorkflowStarted event."""
    attrs: dict[str, Any] = {
        "exec_id": new.exec_id,
        "workflow_name": new.workflow_name,
        "workflow_id": new.workflow_id,
        "input": payloads.loads(new.input),
        "attempt": new.attempt,
    }
    if new.parent_exec_id:
        attrs["parent_exec_id"] = new.parent_exec_id
    if new.predecessor:
        attrs["predecessor"] = new.predecessor
    txn.insert_execution(new, HistoryEvent(seq=1, type="WorkflowStarted", at=now, attrs=attrs))


def run_info(row: ExecutionRecord) -> RunInfo:
    """What `ctx.info()` reports, from the run's row."""
    return RunInfo(
        workflow_name=row.workflow_name,
        workflow_id=row.workflow_id,
        exec_id=row.exec_id,
        attempt=row.attempt,
        parent_execution_id=row.parent_exec_id,
        started_at=row.started_at,
        deadline=row.deadline,
        predecessor=row.predecessor,
    )


def _failure(exc: BaseException, *, non_retryable: bool = False) -> ErrorInfo:
    if isinstance(exc, ApplicationError):
        return ErrorInfo(
            type=str(exc.type), message=exc.message,
            non_retryable=bool(exc.non_retryable) or non_retryable,
            details=payloads.to_json(exc.details),
        )
    if isinstance(exc, HarvestError):
        return ErrorInfo(type=type(exc).__name__, message=exc.message, non_retryable=True)
    return ErrorInfo(type=type(exc).__name__, message=str(exc), non_retryable=non_retryable)


def terminal_state(row: ExecutionRecord) -> RunState:
    """The RunState a sealed run reports on every later drive."""
    error = ErrorInfo.from_json(payloads.loads(row.error)) if row.error else None
    if row.state == "COMPLETED":
        return RunState.Completed(output=payloads.loads(row.output) if row.output else None)
    if row.state == "FAILED":
        return RunState.Failed(error=error or ErrorInfo(type="Error", message="failed"))
    if row.state == "CANCELLED":
        return RunState.Cancelled(reason=error.message if error else (row.cancel_reason or ""))
    if row.state == "TERMINATED":
        return RunState.Terminated(reason=error.message if error else "")
    if row.state == "TIMED_OUT":
        return RunState.TimedOut(error=error or ErrorInfo(type="Timeout", message="timed out"))
    if row.state == "CONTINUED_AS_NEW":
        if not row.successor:
            raise HarvestInternalError(f"run {row.exec_id} continued as new without a successor")
        return RunState.ContinuedAsNew(next=ExecutionId(row.successor))
    raise HarvestInternalError(f"run {row.exec_id} has unknown state {row.state!r}")


__all__ = ["Decider", "Decision", "NonDeterminismDetected", "start_run", "terminal_state"]
