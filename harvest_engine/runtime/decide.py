"""One decision cycle of one run, in one write transaction.

Take the write lock, check the deadline, replay (or feed the cached instance)
the stored history, append staged signals and fired timers, let the code
emit its commands, validate them, append events and projections, seal if
terminal, commit. Either all of it lands or none of it does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.activity import storable_details
from harvest_engine.errors import (
    ApplicationError,
    ContinueAsNew,
    ExecutionNotFound,
    HarvestError,
    HarvestInternalError,
    NonDeterminismDetected,
    PayloadNotJson,
    PayloadTooDeep,
    PayloadTooLarge,
    Unsupported,
    WorkflowPanicked,
)
from harvest_engine.events import HistoryEvent
from harvest_engine.runtime import (
    cancel,
    children,
    drive_time,
    local_activities,
    mutex,
    panics,
    retry,
)
from harvest_engine.runtime.panics import PANIC_BUDGET
from harvest_engine.runtime.run_metadata import project_memo
from harvest_engine.runtime.runs import append, run_info, start_run
from harvest_engine.runtime.settings import HistoryCapReached, Settings
from harvest_engine.states import ErrorInfo, ExecutionId, RunState
from harvest_engine.store.rows import ExecutionRecord, NewExecution, NewTask, TaskRecord
from harvest_engine.store.txn_protocol import RunBusy, WriteTxn
from harvest_engine.workflow.commands import CommandRejected
from harvest_engine.workflow.instance import WorkflowInstance

if TYPE_CHECKING:
    from harvest_engine.runtime.cache import InstanceCache
    from harvest_engine.runtime.registry import Registry
    from harvest_engine.store.protocol import DurableStore

log = logging.getLogger("harvest_engine.runtime")


CHILD_CONTINUE_AS_NEW = (
    "continue_as_new is not supported in child workflows in this release"
)


FIRST_DRIVE_SEQ = 2
"""The next seq of a run whose history is WorkflowStarted alone: its first drive.

Such a run is always replayed afresh (one event) instead of taken from the
cache, so signals staged before it go in before the body begins whether or
not an earlier drive ran the body to a park that recorded nothing.
"""


@dataclass
class Decision:
    """What a cycle did: whether it appended anything, and where it left the run."""

    exec_id: str
    progressed: bool = False
    state: RunState | None = None
    waiting_signal: str | None = None
    # Every signal that can move the run on, when more than the one awaited.
    waiting_signal_names: tuple[str, ...] = ()
    waiting_timer: bool = False
    waiting_mutex: str | None = None
    waiting_workflows: list[str] = field(default_factory=list)
    stuck: bool = False
    inputs_left: bool = False
    events: list[HistoryEvent] = field(default_factory=list)
    # Activity tasks this cycle scheduled and claimed in its own transaction
    # (group commit): the caller runs their bodies once the commit is done.
    claimed: list[TaskRecord] = field(default_factory=list)
    # Its transaction knew the run holds no task and no timer (`holds_no_work`):
    # a drive of the run alone need not look for ready tasks or a wakeup.
    idle: bool = False

    @property
    def terminal(self) -> bool:
        """Whether the run ended in this cycle (the caller stops driving it)."""
        return self.state is not None and self.state.is_terminal

    @property
    def waiting_workflow(self) -> str | None:
        """The first run this one waits on directly, if any."""
        return self.waiting_workflows[0] if self.waiting_workflows else None

    @property
    def keeps_checking(self) -> bool:
        """Parked on another run or a mutex, or staged signals left past the byte room.

        Every pass checks such a run again; a run whose ingest
        stopped at the byte cap's room meets the cap on its next cycle.
        """
        return (
            self.waiting_mutex is not None
            or bool(self.waiting_workflows)
            or self.inputs_left
        )


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
    # The signal ingest used up the byte cap's room (guide §8).
    inputs_left: bool = False
    # Claim the activity tasks this cycle schedules (None: leave them PENDING).
    claimed: list[TaskRecord] | None = None

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
        self,
        store: DurableStore,
        registry: Registry,
        cache: InstanceCache,
        settings: Settings,
    ) -> None:
        self.store = store
        self.registry = registry
        self.cache = cache
        self.settings = settings

    def decide(
        self,
        exec_id: str,
        now: datetime,
        *,
        claim: bool = False,
        retry_panic_now: bool = False,
    ) -> Decision:
        """One cycle; raises (and rolls back) on divergence, unknown names and panics.

        With `claim`, the activity tasks the cycle schedules are claimed
        (RUNNING) in the same transaction and listed in `Decision.claimed`,
        which saves a claim commit per activity; the caller must run them.
        A run that panicked waits out its backoff (`panics.backoff`) unless
        `retry_panic_now` (`run_until_blocked` on that run: a person asked).
        """
        try:
            with self.store.write() as txn:
                return self._cycle(txn, exec_id, now, claim, retry_panic_now)
        except RunBusy:
            # Another worker holds a run this cycle needs: stand back (the
            # cycle rolled back) and decide it again on a later pass.
            self.cache.evict(exec_id)
            return Decision(exec_id)
        except children.EffectFailed as failed:
            self.cache.evict(exec_id)
            return self._after_error(exec_id, failed.error, now)
        except CommandRejected as rejected:
            self.cache.evict(exec_id)
            return self._reject(exec_id, rejected, now)
        except _Panic as panic:
            self.cache.evict(exec_id)
            return self._count_panic(exec_id, panic.error, now)
        except HistoryCapReached as cap:
            self.cache.evict(exec_id)
            return self._cancel_instead(exec_id, now) or self._seal_at_cap(
                exec_id, cap.reason, now
            )
        except cancel.CleanupBudgetReached as budget:
            self.cache.evict(exec_id)
            ended = self._cancel_instead(exec_id, now)
            if ended is None:
                raise HarvestInternalError(
                    f"cleanup budget of a run with no cancel: {exec_id}"
                ) from budget
            return ended
        except HarvestError as exc:
            self.cache.evict(exec_id)
            return self._after_error(exec_id, exc, now)
        except BaseException:
            self.cache.evict(exec_id)
            raise

    def _after_error(
        self, exec_id: str, error: HarvestError, now: datetime
    ) -> Decision:
        """A rolled-back cycle's error: a cancelled run ends CANCELLED on a repeating one."""
        if cancel.ends_on_error(error):
            ended = self._cancel_instead(exec_id, now)
            if ended is not None:
                return ended
        raise error

    def _cancel_instead(self, exec_id: str, now: datetime) -> Decision | None:
        """Seal a run with a pending cancel CANCELLED after its cycle rolled back."""
        reason = cancel.seal_cancelled_after(
            self.store, exec_id, now, self.registry, self.settings, self.cache.evict
        )
        if reason is None:
            return None
        return Decision(
            exec_id, progressed=True, state=RunState.Cancelled(reason=reason)
        )

    # -- the cycle ---------------------------------------------------------------

    def _cycle(
        self,
        txn: WriteTxn,
        exec_id: str,
        now: datetime,
        claim: bool = False,
        retry_panic_now: bool = False,
    ) -> Decision:
        if not txn.lock_for_decision(exec_id):
            return Decision(exec_id)  # another worker is deciding it right now
        row = txn.execution(exec_id)
        if row is None:  # run_until_blocked reads no row before its decision
            raise ExecutionNotFound(exec_id=exec_id)
        if row.state != "RUNNING":
            self.cache.evict(exec_id)
            return Decision(exec_id, state=terminal_state(row))
        # A pending cancel skips a retry's backoff, as it skips a local
        # activity's (guide §7): every cancel ends the run, and a long backoff
        # must not keep a cancelled run RUNNING until it passes.
        if (
            row.not_before is not None
            and now < row.not_before
            and row.cancel_reason is None
            and not (row.panic_count > 0 and (retry_panic_now or _past(row, now)))
        ):
            return Decision(exec_id, waiting_timer=True)
        if row.deadline is not None and now >= row.deadline:
            return self._time_out(txn, row, now)
        info = self.registry.workflow(row.workflow_name)
        instance = self._instance(row, info)
        cycle = _Cycle(txn, row, now, row.next_seq, claimed=[] if claim else None)
        instance.effects = children.Effects(
            txn, row, now, self.registry, self.cache.evict, instance
        )
        instance.drive_now = drive_time.plain(now)
        try:
            stored = list(txn.load_events(exec_id, instance.applied_seq))
            instance.expect(stored)
            for event in stored:
                instance.feed(event)
            first_drive = instance.start_pending and cycle.next_seq == FIRST_DRIVE_SEQ
            if first_drive:
                self._deliver_inputs(cycle, instance, before_start=True)
            instance.begin()
            cycle.take(instance.flush(cycle.next_seq, now))
            if instance.halted is None:
                # One signal read a cycle: the first drive's came before the body.
                self._deliver_inputs(cycle, instance, signals=not first_drive)
            if instance.halted is None:
                self._settle_waits(cycle, instance)
        except (NonDeterminismDetected, HarvestInternalError, RunBusy):
            raise
        except self.store.storage_errors:
            raise  # the storage failed, not the workflow: no panic is counted
        except Exception as exc:
            # Workflow code raised outside the body's task: a signal handler,
            # a condition predicate, an update validator. A bug, like a panic.
            raise _Panic(exc) from exc
        finally:
            instance.effects = None
            instance.drive_now = None
        self._check_violation(instance)
        if instance.rejection is not None:
            raise instance.rejection
        if instance.halted is not None:
            decision = self._halt(cycle, instance)
        elif row.cancel_reason is not None:
            decision = self._cancelled(cycle, instance)
        elif instance.done:
            decision = self._finish(cycle, instance)
        else:
            decision = self._park(cycle, instance)
        decision.inputs_left = cycle.inputs_left and not decision.terminal
        if not cycle.recorded:
            self._record(cycle, instance, decision)
        if decision.terminal:
            instance.close()
        else:
            self.cache.put(exec_id, instance)
        decision.events = cycle.events
        decision.claimed = cycle.claimed or []
        decision.progressed = bool(cycle.events) or decision.terminal
        decision.idle = (
            decision.state is None
            and not decision.claimed
            and txn.holds_no_work(exec_id)
        )
        return decision

    def _instance(self, row: ExecutionRecord, info: Any) -> WorkflowInstance:
        cached = self.cache.take(row.exec_id)
        # A cancel request evicts: the body sees it from the start of a replay.
        if (
            cached is not None
            and cached.applied_seq < row.next_seq
            and row.next_seq > FIRST_DRIVE_SEQ
            and cached.fn is info.fn
            and cached.cancel_reason == row.cancel_reason
        ):
            return cached
        if cached is not None:
            cached.close()
        fresh = WorkflowInstance(
            info.fn,
            run_info(row),
            input_type=info.input_type,
            cancel_reason=row.cancel_reason,
        )
        if cached is not None and cached.started is not None:
            # The WorkflowStarted the dropped instance applied (a run at its
            # first drive again, its park having recorded nothing): recorded
            # events never change, so it is not read again.
            fresh.feed(cached.started)
        return fresh

    def _deliver_inputs(
        self,
        cycle: _Cycle,
        instance: WorkflowInstance,
        *,
        before_start: bool = False,
        signals: bool = True,
    ) -> None:
        """Staged signals and due timers, merged by arrival time, each followed by a flush.

        With `before_start` (a run's first drive) the body has not begun: the
        signals go into its buffer, marked so replay buffers them first too.
        Without `signals`, only timers are read.
        """
        txn, exec_id = cycle.txn, cycle.row.exec_id
        # The history caps bound the ingest (guide §8): the event cap by
        # count, the byte cap by the payload bytes left under it.
        room = self.settings.signal_room(cycle.next_seq)
        byte_room = self.settings.signal_byte_room(cycle.row)
        staged = txn.staged_signals(exec_id, room, byte_room) if signals else []
        signal_bytes = 0
        timers = [] if before_start else list(txn.due_timers(exec_id, cycle.now))
        if not staged and not timers:
            return  # the usual cycle: nothing arrived
        inputs: list[tuple[datetime, int, Any]] = [
            (s.received_at, 1, s) for s in staged
        ] + [(t.fire_at, 0, t) for t in timers]
        inputs.sort(key=lambda item: (item[0], item[1]))
        delivered: list[int] = []
        fired: list[str] = []
        for _, kind, item in inputs:
            if kind == 1:
                attrs = {"name": item.name, "payload": item.payload.value}
                if before_start:
                    attrs["before_start"] = True
                event = cycle.event("SignalReceived", attrs)
                delivered.append(item.signal_id)
                signal_bytes += len(payloads.dumps(event.attrs))
            else:
                if _cancelled_in(cycle, item.timer_id):
                    # Read as due before this drive cancelled it (a handler's
                    # reset, say): the row is dropped with the cancel, and a
                    # timer started again under its id must not take its fire.
                    continue
                event = cycle.event("TimerFired", {"timer_id": item.timer_id})
                fired.append(item.timer_id)
            instance.deliver(event)
            if not before_start:
                cycle.take(instance.flush(cycle.next_seq, cycle.now))
            if instance.halted is not None:
                break
        if byte_room is not None and delivered and signal_bytes >= byte_room:
            # The history now holds the byte cap's worth: a signal still
            # staged fails the run at the cap on the next cycle, so the
            # drive goes on instead of parking the run over its cap.
            cycle.inputs_left = True
        if delivered:
            txn.mark_signals_delivered(exec_id, delivered)
        if fired:
            txn.delete_timers(exec_id, fired)

    def _settle_waits(self, cycle: _Cycle, instance: WorkflowInstance) -> None:
        """Grant free mutexes and answer awaited runs that ended, until nothing changes."""
        txn, exec_id = cycle.txn, cycle.row.exec_id
        while instance.halted is None:
            answer: tuple[str, dict[str, Any]] | None = None
            granted = mutex.grant_next(txn, exec_id, instance)
            if granted is not None:
                answer = ("MutexGranted", {"key": granted[0], "lock_seq": granted[1]})
            else:
                for kind, command_id, target in instance.waiting_workflows():
                    answer = children.result_event(txn, kind, command_id, target)
                    if answer is not None:
                        break
            if answer is None:
                return
            instance.deliver(cycle.event(*answer))
            cycle.take(instance.flush(cycle.next_seq, cycle.now))

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
                value, output = payloads.checked(value, "workflow result")
            except (PayloadTooDeep, PayloadTooLarge) as exc:
                return self._fail(cycle, _failure(exc, non_retryable=True))
            except PayloadNotJson as exc:
                # Returning something that is not JSON is a bug in the code:
                # it counts against the panic budget instead of escaping the
                # drive on every cycle.
                raise _Panic(exc) from exc
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
            )
            decision = self._fail(cycle, error)
            if scheduled is not None:
                # Written after WorkflowFailed, in the same transaction, as the
                # sibling backends write it (guide §7): an operational tail
                # that replay, which stops at the terminal event, never meets.
                cycle.event("WorkflowRetryScheduled", scheduled.event_attrs())
            return decision
        raise _Panic(value)

    def _cancelled(self, cycle: _Cycle, instance: WorkflowInstance) -> Decision:
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
                raise _Panic(value)
            self._record(cycle, instance, None)
        else:
            decision = self._park(cycle, instance)
            self._record(cycle, instance, decision)
            if cancel.runnable_tasks_left(cycle.txn, row.exec_id, self.registry):
                return decision
        reason = cancel.seal_cancelled(
            cycle.txn,
            row.exec_id,
            cycle.now,
            self.registry,
            self.settings,
            self.cache.evict,
        )
        return Decision(row.exec_id, state=RunState.Cancelled(reason=reason))

    def _halt(self, cycle: _Cycle, instance: WorkflowInstance) -> Decision:
        """The run's own command sealed it through a parent-close cascade."""
        state, reason = instance.halted or ("CANCELLED", "")
        self._record(cycle, instance, None)
        txn, exec_id = cycle.txn, cycle.row.exec_id
        error = children.ending_error(state, reason)
        if state == "FAILED":  # the parent-close TERMINATE policy
            info = ErrorInfo.from_json(payloads.loads(error))
            append(txn, exec_id, "WorkflowFailed", {"error": info.to_json()}, cycle.now)
        else:
            append(txn, exec_id, "WorkflowCancelled", {"reason": reason}, cycle.now)
        children.seal_run(txn, exec_id, state, cycle.now, self.cache.evict, error=error)
        ended: RunState
        if state == "FAILED":
            ended = RunState.Failed(error=info)
        elif state == "CANCELLED":
            ended = RunState.Cancelled(reason=reason)
        else:
            ended = RunState.Terminated(reason=reason)
        return Decision(exec_id, state=ended)

    def _fail(self, cycle: _Cycle, error: ErrorInfo) -> Decision:
        cycle.event("WorkflowFailed", {"error": error.to_json()})
        self._seal(cycle, "FAILED", error=payloads.dumps(error.to_json()))
        return Decision(cycle.row.exec_id, state=RunState.Failed(error=error))

    def _continue_as_new(
        self, cycle: _Cycle, request: ContinueAsNew, instance: WorkflowInstance
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
        self._record(cycle, instance, None)
        cycle.txn.update_execution(row.exec_id, successor=successor)
        # Read again: this cycle's own upserts changed the memo and attributes.
        latest = cycle.txn.execution(row.exec_id) or row
        start_run(
            cycle.txn,
            NewExecution(
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
            ),
            cycle.now,
            advice_at=self.settings.advice_at(),
        )
        return Decision(
            row.exec_id, state=RunState.ContinuedAsNew(next=ExecutionId(successor))
        )

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
        children.seal_run(
            txn,
            row.exec_id,
            "TIMED_OUT",
            now,
            self.cache.evict,
            error=payloads.dumps(error.to_json()),
        )
        return Decision(
            row.exec_id, progressed=True, state=RunState.TimedOut(error=error)
        )

    @staticmethod
    def _seal(cycle: _Cycle, state: str, **values: Any) -> None:
        """Seal the run once the cycle's events and projections are written."""
        cycle.seal = (state, values)

    # -- a parked run --------------------------------------------------------------

    def _park(self, cycle: _Cycle, instance: WorkflowInstance) -> Decision:
        decision = Decision(cycle.row.exec_id)
        names = instance.signals.waiting_names()
        waits = instance.waiting_workflows()
        key = mutex.waiting_key(instance)
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

    # -- projections -----------------------------------------------------------------

    def _record(
        self,
        cycle: _Cycle,
        instance: WorkflowInstance | None,
        decision: Decision | None,
    ) -> None:
        """Append the cycle's events, derive the projection rows, seal if it ended."""
        txn, row = cycle.txn, cycle.row
        exec_id = row.exec_id
        cycle.recorded = True
        if instance is not None:
            self.settings.check_caps(row, cycle.events, cycle.seal)
        for event in cycle.events:
            self._project(cycle, event)
        if instance is not None:
            for timer_id, fire_at in instance.take_timer_arms():
                txn.add_timer(exec_id, timer_id, fire_at)
        keep = decision is not None and decision.keeps_checking
        after_panic = {"not_before": None} if row.panic_count else {}
        # One write of the row: the events' next seq with the flags.
        txn.append_events(
            exec_id,
            cycle.events,
            needs_decision=int(keep),
            panic_count=0,
            **after_panic,
        )
        lines = [] if instance is None else instance.take_log_lines()
        policy = self.settings.log_policy
        if lines and policy is not None:
            txn.append_log_lines(exec_id, lines, policy.max_lines)
        if cycle.seal is not None:
            state, values = cycle.seal
            children.seal_run(
                txn, exec_id, state, cycle.now, self.cache.evict, **values
            )

    def _project(self, cycle: _Cycle, event: HistoryEvent) -> None:
        txn, row, now = cycle.txn, cycle.row, cycle.now
        attrs = event.attrs
        if event.type == "ActivityScheduled":
            task = self._task(row, attrs, now)
            if cycle.claimed is not None:
                cycle.claimed.append(txn.add_claimed_task(task, now))
            else:
                txn.add_task(task)
        elif event.type == "LocalActivityScheduled":
            txn.add_task(local_activities.new_task(self.registry, row, attrs, now))
        elif event.type == "TimerCancelled":
            txn.delete_timers(row.exec_id, [str(attrs["timer_id"])])
        elif event.type == "SearchAttributesUpserted":
            # Read again: an earlier upsert of this cycle changed the row.
            fresh = txn.execution(row.exec_id) or row
            txn.update_execution(
                row.exec_id,
                search_attributes=merged_search_attributes(
                    fresh.search_attributes, attrs.get("attributes") or {}
                ),
            )
        elif event.type == "MemoUpserted":
            project_memo(txn, row.exec_id, attrs.get("patch") or {})

    def _task(
        self, row: ExecutionRecord, attrs: dict[str, Any], now: datetime
    ) -> NewTask:
        activity = self.registry.activity(str(attrs["name"]))
        retry = attrs.get("retry")
        if retry is None and activity.retry is not None:
            retry = activity.retry.to_json()
        max_attempts = (
            activity.max_attempts if retry is None else int(retry["max_attempts"])
        )
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
            heartbeat_timeout=activity.heartbeat_timeout,
        )

    def _seal_at_cap(
        self, exec_id: str, reason: dict[str, Any], now: datetime
    ) -> Decision:
        """The rolled-back decision reached a cap: fail the run with the typed reason."""
        info = ErrorInfo(
            type="HistoryCapReached",
            message=payloads.dumps(reason),
            non_retryable=True,
            details=reason,
        )
        with self.store.write() as txn:
            if txn.execution(exec_id) is None:
                raise HarvestInternalError(f"cap seal of a run that is gone: {exec_id}")
            return self._seal_failed(txn, exec_id, info, now)

    def _seal_failed(
        self, txn: WriteTxn, exec_id: str, info: ErrorInfo, now: datetime
    ) -> Decision:
        """End a run FAILED with a WorkflowFailed event after its cycle rolled back."""
        row = txn.execution(exec_id)
        if row is None:
            raise HarvestInternalError(f"failure seal of a run that is gone: {exec_id}")
        event = HistoryEvent(
            seq=row.next_seq,
            type="WorkflowFailed",
            at=now,
            attrs={"error": info.to_json()},
        )
        txn.append_events(exec_id, [event])
        children.seal_run(
            txn,
            exec_id,
            "FAILED",
            now,
            self.cache.evict,
            error=payloads.dumps(info.to_json()),
        )
        return Decision(exec_id, progressed=True, state=RunState.Failed(error=info))

    def _reject(
        self, exec_id: str, rejected: CommandRejected, now: datetime
    ) -> Decision:
        """A rejected command: the cycle rolled back; seal FAILED, then raise Unsupported."""
        info = ErrorInfo(
            type="Unsupported",
            message=f"{rejected.feature} — {rejected.why}",
            non_retryable=True,
            details={"feature": rejected.feature},
        )
        with self.store.write() as txn:
            row = txn.execution(exec_id)
            if row is None or row.state != "RUNNING":
                raise HarvestInternalError(
                    f"rejection seal of a run that is gone: {exec_id}"
                )
            self._seal_failed(txn, exec_id, info, now)
        raise Unsupported(feature=rejected.feature, why=rejected.why)

    # -- panics ------------------------------------------------------------------------

    def _count_panic(
        self, exec_id: str, error: BaseException, now: datetime
    ) -> Decision:
        """A bug in the code: the cycle rolled back; count it, seal FAILED at the budget."""
        with self.store.write() as txn:
            row = txn.execution(exec_id)
            if row is None or row.state != "RUNNING":
                raise HarvestInternalError(
                    f"panic bookkeeping for a run that is gone: {exec_id}"
                )
            count = row.panic_count + 1
            details = panics.details(error)
            where = panics.where(details)
            if count < PANIC_BUDGET:
                # Durable: a pass (poll_once, run_until_idle, serve) leaves the
                # run alone until then, so the budget counts attempts a person
                # can react to; run_until_blocked on it retries at once.
                retry_at = panics.retry_at(count, now)
                txn.update_execution(
                    exec_id, panic_count=count, not_before=retry_at, needs_decision=1
                )
            else:
                info = ErrorInfo(
                    type="Panic",
                    message=f"workflow code raised {type(error).__name__}: {error}"
                    f"{where} ({count} cycles in a row)",
                    non_retryable=True,
                    details=details,
                )
                return self._seal_failed(txn, exec_id, info, now)
        raise WorkflowPanicked(
            exec_id=exec_id,
            error=f"{type(error).__name__}: {error}{where}",
            count=count,
            budget=PANIC_BUDGET,
            details=details,
            retry_at=retry_at,
        ) from error


def _past(row: ExecutionRecord, now: datetime) -> bool:
    """Whether the run's execution deadline has passed (it times out, backoff or not)."""
    return row.deadline is not None and now >= row.deadline


def _cancelled_in(cycle: _Cycle, timer_id: str) -> bool:
    """Whether this cycle recorded TimerCancelled for `timer_id`."""
    return any(
        e.type == "TimerCancelled" and e.attrs.get("timer_id") == timer_id
        for e in cycle.events
    )


class _Panic(Exception):
    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _failure(exc: BaseException, *, non_retryable: bool = False) -> ErrorInfo:
    if isinstance(exc, ApplicationError):
        message, details = storable_details(exc)
        return ErrorInfo(
            type=str(exc.type),
            message=message,
            non_retryable=bool(exc.non_retryable) or non_retryable,
            details=details,
        )
    if isinstance(exc, HarvestError):
        return ErrorInfo(
            type=type(exc).__name__, message=exc.message, non_retryable=True
        )
    return ErrorInfo(
        type=type(exc).__name__, message=str(exc), non_retryable=non_retryable
    )


def merged_search_attributes(stored: str | None, patch: dict[str, Any]) -> str | None:
    """A run's search attributes after an upsert: None removes a key."""
    current = payloads.loads(stored) if stored else {}
    if not isinstance(current, dict):
        current = {}
    for key, value in patch.items():
        if value is None:
            current.pop(key, None)
        else:
            current[key] = value
    return payloads.dumps(current) if current else None


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


__all__ = [
    "Decider",
    "Decision",
    "NonDeterminismDetected",
    "run_info",
    "start_run",
    "terminal_state",
]
