"""Where a cycle leaves its run: parked, or ended.

An ending is completed, failed, cancelled, halted by a parent-close
cascade, timed out or continued as new; each appends its terminal event
and seals the run with the cycle (`projections`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.activity import storable_details
from harvest_engine.errors import (
    ApplicationError,
    ContinueAsNew,
    HarvestError,
    HarvestInternalError,
    PayloadNotJson,
    PayloadTooDeep,
    PayloadTooLarge,
)
from harvest_engine.events import IMPOSED
from harvest_engine.runtime.deciding import cancel, children, enqueue, mutex, retry
from harvest_engine.runtime.deciding.after_rollback import AfterRollback
from harvest_engine.runtime.deciding.cycle import Cycle, Decision, Panic
from harvest_engine.runtime.deciding.projections import Projections
from harvest_engine.runtime.deciding.runs import append, start_run
from harvest_engine.states import ErrorInfo, ExecutionId, RunState
from harvest_engine.store.rows import ExecutionRecord, NewExecution
from harvest_engine.tracebacks import log_failed_run, stack_trace

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.runtime.cache import InstanceCache
    from harvest_engine.runtime.deciding.run_ends import RunEnds
    from harvest_engine.runtime.registry import Registry
    from harvest_engine.runtime.settings import Settings
    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.store.txn_protocol import WriteTxn
    from harvest_engine.workflow.instance import WorkflowInstance

CHILD_CONTINUE_AS_NEW = (
    "continue_as_new is not supported in child workflows in this release"
)


class Outcomes:
    """Parks or ends the run once its code has run: the base of `Decider`, with its parts."""

    def __init__(
        self,
        store: DurableStore,
        registry: Registry,
        cache: InstanceCache,
        settings: Settings,
        ends: RunEnds,
    ) -> None:
        self.store = store
        self.registry = registry
        self.cache = cache
        self.settings = settings
        self.ends = ends
        """Where each seal goes: the cached instance evicted, the run_closed hooks told."""
        self.projections = Projections(registry, ends, settings)
        self.after_rollback = AfterRollback(store, registry, ends, settings)

    def _finish(self, cycle: Cycle, instance: WorkflowInstance) -> Decision:
        row = cycle.row
        kind, value = instance.outcome()
        if kind == "completed":
            try:
                value, output = payloads.checked(value, "workflow result")
            except (PayloadTooDeep, PayloadTooLarge) as exc:
                return self._fail(cycle, _failure(exc, non_retryable=True))
            except PayloadNotJson as exc:
                # Returning something that is not JSON is a bug in the code:
                # it counts against the panic budget instead of escaping the
                # drive on every cycle.
                raise Panic(exc) from exc
            cycle.event("WorkflowCompleted", {"output": value})
            self._seal(cycle, "COMPLETED", output=output)
            return Decision(row.exec_id, state=RunState.Completed(output=value))
        if isinstance(value, ContinueAsNew):
            if row.parent_exec_id is not None:
                return self._fail(
                    cycle,
                    ErrorInfo(
                        type="ContinueAsNewInChild",
                        message=CHILD_CONTINUE_AS_NEW,
                        non_retryable=True,
                    ),
                )
            return self._continue_as_new(cycle, value, instance)
        if isinstance(value, (ApplicationError, PayloadTooDeep, PayloadTooLarge)):
            error = _failure(value)
            scheduled = retry.schedule_retry(
                cycle.txn,
                row,
                error,
                cycle.now,
                self.registry,
                cycle.events,
                advice_at=self.settings.advice_at(),
                advice_bytes=self.settings.advice_bytes(),
            )
            decision = self._fail(cycle, error)
            if scheduled is not None:
                # Written after WorkflowFailed, in the same transaction, as the
                # sibling backends write it (guide §7): an operational tail
                # that replay, which stops at the terminal event, never meets.
                cycle.event("WorkflowRetryScheduled", scheduled.event_attrs())
            return decision
        raise Panic(value)

    def _cancelled(self, cycle: Cycle, instance: WorkflowInstance) -> Decision:
        """A cycle of a run with a pending cancel: go on with cleanup, or end CANCELLED."""
        row = cycle.row
        if cancel.budget_reached(row, len(cycle.events)):
            raise cancel.CleanupBudgetReached(row.exec_id)
        if instance.done:
            kind, value = instance.outcome()
            bug = kind == "raised" and not isinstance(
                value,
                (ApplicationError, PayloadTooDeep, PayloadTooLarge, ContinueAsNew),
            )
            if bug:
                raise Panic(value)
            self.projections.record(cycle, instance, None)
        else:
            decision = self._park(cycle, instance)
            self.projections.record(cycle, instance, decision)
            if cancel.runnable_tasks_left(cycle.txn, row.exec_id, self.registry):
                return decision
        reason = cancel.seal_cancelled(
            cycle.txn,
            row.exec_id,
            cycle.now,
            self.registry,
            self.settings,
            self.ends,
        )
        return Decision(row.exec_id, state=RunState.Cancelled(reason=reason))

    def _halt(self, cycle: Cycle, instance: WorkflowInstance) -> Decision:
        """The run's own command sealed it through a parent-close cascade."""
        state, reason = instance.halted or ("CANCELLED", "")
        self.projections.record(cycle, instance, None)
        txn, exec_id = cycle.txn, cycle.row.exec_id
        error = children.ending_error(state, reason)
        if state == "FAILED":  # the parent-close TERMINATE policy
            info = ErrorInfo.from_json(payloads.loads(error))
            append(txn, exec_id, "WorkflowFailed", {"error": info.to_json()}, cycle.now)
        else:
            attrs = {"reason": reason, IMPOSED: True}
            append(txn, exec_id, "WorkflowCancelled", attrs, cycle.now)
        children.seal_run(txn, exec_id, state, cycle.now, self.ends, error=error)
        ended: RunState
        if state == "FAILED":
            ended = RunState.Failed(error=info)
        elif state == "CANCELLED":
            ended = RunState.Cancelled(reason=reason)
        else:
            ended = RunState.Terminated(reason=reason)
        return Decision(exec_id, state=ended)

    def _fail(self, cycle: Cycle, error: ErrorInfo) -> Decision:
        cycle.event("WorkflowFailed", {"error": error.to_json()})
        self._seal(cycle, "FAILED", error=payloads.dumps(error.to_json()))
        row = cycle.row
        log_failed_run(
            exec_id=row.exec_id,
            workflow_id=row.workflow_id,
            workflow_name=row.workflow_name,
            error=error,
        )
        return Decision(cycle.row.exec_id, state=RunState.Failed(error=error))

    def _continue_as_new(
        self, cycle: Cycle, request: ContinueAsNew, instance: WorkflowInstance
    ) -> Decision:
        row = cycle.row
        successor = str(ExecutionId.new())
        cycle.event(
            "WorkflowContinuedAsNew", {"input": request.input, "successor": successor}
        )
        self._seal(cycle, "CONTINUED_AS_NEW")
        # The backlog this hand-off did not replay moves before the seal,
        # which would drop (unkeyed) or retire (keyed) it: each signal
        # arrives exactly once (guide §7).
        cycle.txn.move_staged_signals(row.exec_id, successor)
        self.projections.record(cycle, instance, None)
        cycle.txn.update_execution(row.exec_id, successor=successor)
        # Read again: this cycle's own upserts changed the memo and attributes.
        latest = cycle.txn.execution(row.exec_id) or row
        new = NewExecution(
            exec_id=successor,
            workflow_name=row.workflow_name,
            workflow_id=row.workflow_id,
            input=payloads.dumps(request.input),
            predecessor=row.exec_id,
            memo=latest.memo,
            search_attributes=latest.search_attributes,
            deadline=self._deadline(row.workflow_name, cycle.now),
            # The frozen retry policy goes on with the chain (attempt 1
            # again), as the deadline counts afresh: a successor that
            # fails retryably retries like the run it replaces (guide §7).
            retry_policy=row.retry_policy,
        )
        start_run(
            cycle.txn,
            new,
            cycle.now,
            advice_at=self.settings.advice_at(),
            advice_bytes=self.settings.advice_bytes(),
        )
        # A run of a queue (or of a workflow with its own limits) does not
        # hand its slot on: the successor is admitted like a fresh start.
        enqueue.enqueue_successor(self.registry, cycle.txn, row.exec_id, new, cycle.now)
        return Decision(
            row.exec_id, state=RunState.ContinuedAsNew(next=ExecutionId(successor))
        )

    def _deadline(self, workflow_name: str, now: datetime) -> datetime | None:
        info = self.registry.workflows.get(workflow_name)
        if info is None or info.execution_timeout is None:
            return None
        return now + info.execution_timeout

    def _time_out(self, txn: WriteTxn, row: ExecutionRecord, now: datetime) -> Decision:
        cycle = Cycle(txn, row, now, row.next_seq)
        error = ErrorInfo(
            type="WorkflowExecutionTimeout",
            message=f"timeout: WorkflowExecution for {row.workflow_name}",
            non_retryable=True,
        )
        cycle.event("WorkflowExecutionTimedOut", {"error": error.to_json()})
        txn.append_events(row.exec_id, cycle.events)
        children.seal_run(
            txn,
            row.exec_id,
            "TIMED_OUT",
            now,
            self.ends,
            error=payloads.dumps(error.to_json()),
            parent=row.parent_exec_id,
        )
        return Decision(
            row.exec_id, progressed=True, state=RunState.TimedOut(error=error)
        )

    @staticmethod
    def _seal(cycle: Cycle, state: str, **values: Any) -> None:
        """Seal the run once the cycle's events and projections are written."""
        cycle.seal = (state, values)

    def _park(self, cycle: Cycle, instance: WorkflowInstance) -> Decision:
        decision = Decision(cycle.row.exec_id)
        names = instance.signals.waiting_names()
        waits = instance.waiting_workflows()
        key = mutex.waiting_key(instance)
        awaited = [
            children.waited_run(cycle.txn, target)
            for kind, _, target in waits
            if kind != "child"
        ]
        # Linked to what it awaits, the run keeps no flag: the seal wakes it.
        decision.awaits_external = bool(awaited) and not cycle.txn.watch_runs(
            cycle.row.exec_id, awaited
        )
        if names:
            decision.waiting_signal = names[0]
        elif key is not None:
            decision.waiting_mutex = key
        elif waits:
            decision.waiting_workflows = [
                children.waited_run(cycle.txn, target) for _, _, target in waits
            ]
        elif (
            timers := instance.waiting_timer_ids()
        ) or instance.waiting_activity_ids():
            decision.waiting_timer = bool(timers)
        elif instance.waiting_conditions() and instance.signals.handler_names():
            # Only a signal handler can change what the condition reads.
            handlers = tuple(instance.signals.handler_names())
            decision.waiting_signal, decision.waiting_signal_names = (
                handlers[0],
                handlers,
            )
        elif not cycle.events:
            decision.stuck = True
        else:
            decision.stuck = not instance.waiting_activity_ids()
        return decision


def _failure(exc: BaseException, *, non_retryable: bool = False) -> ErrorInfo:
    trace = stack_trace(exc)
    if isinstance(exc, ApplicationError):
        message, details = storable_details(exc)
        return ErrorInfo(
            type=str(exc.type),
            message=message,
            non_retryable=bool(exc.non_retryable) or non_retryable,
            details=details,
            stack_trace=trace,
        )
    if isinstance(exc, HarvestError):
        return ErrorInfo(
            type=type(exc).__name__,
            message=exc.message,
            non_retryable=True,
            stack_trace=trace,
        )
    return ErrorInfo(
        type=type(exc).__name__,
        message=str(exc),
        non_retryable=non_retryable,
        stack_trace=trace,
    )


def terminal_state(row: ExecutionRecord) -> RunState:
    """The RunState a sealed run reports on every later drive."""
    error = ErrorInfo.from_json(payloads.loads(row.error)) if row.error else None
    if row.state == "COMPLETED":
        return RunState.Completed(
            output=payloads.loads(row.output) if row.output else None
        )
    if row.state == "FAILED":
        return RunState.Failed(error=error or ErrorInfo(type="Error", message="failed"))
    if row.state == "CANCELLED":
        return RunState.Cancelled(
            reason=error.message if error else (row.cancel_reason or "")
        )
    if row.state == "TERMINATED":
        return RunState.Terminated(reason=error.message if error else "")
    if row.state == "TIMED_OUT":
        return RunState.TimedOut(
            error=error or ErrorInfo(type="Timeout", message="timed out")
        )
    if row.state == "CONTINUED_AS_NEW":
        if not row.successor:
            raise HarvestInternalError(
                f"run {row.exec_id} continued as new without a successor"
            )
        return RunState.ContinuedAsNew(next=ExecutionId(row.successor))
    raise HarvestInternalError(f"run {row.exec_id} has unknown state {row.state!r}")
