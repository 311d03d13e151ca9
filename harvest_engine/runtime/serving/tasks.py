"""Running activity tasks: claim (commit), run the body outside any transaction, record the result.

A crash between the claim and the record leaves the task RUNNING; the next
open puts it back to PENDING and the body runs again with the same
idempotency key (at-least-once).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.activity import (
    ActivityContext,
    ActivityRunInfo,
    AttemptResult,
    error_info,
)
from harvest_engine.attempt_cancel import AttemptCancel
from harvest_engine.errors import UnknownActivity
from harvest_engine.events import HistoryEvent
from harvest_engine.runtime.attempts import RunningAttempts
from harvest_engine.runtime.deciding import local_activities
from harvest_engine.runtime.flow import gates
from harvest_engine.runtime.registry import RegisteredActivity
from harvest_engine.runtime.serving import breakers, intercepted_attempts
from harvest_engine.runtime.serving.attempt_rules import (
    budget_of,
    ledger_entry,
    retry_at,
    split_ledger,
)
from harvest_engine.runtime.serving.run_names import RunNames
from harvest_engine.states import ErrorInfo
from harvest_engine.store.rows import AttemptRecord, TaskRecord
from harvest_engine.tracebacks import log_failed_attempt

if TYPE_CHECKING:
    from harvest_engine.runtime.registry import Registry
    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.store.txn_protocol import WriteTxn

Clock = Callable[[], datetime]


@dataclass(frozen=True)
class Finished:
    """An attempt whose body has run and whose outcome is not yet recorded."""

    task: TaskRecord
    activity: RegisteredActivity
    result: AttemptResult
    started: datetime
    ended: datetime
    probe: bool = False
    """Whether the attempt was its circuit breaker's probe (breakers.py)."""
    not_before: datetime | None = None
    """The earliest retry of an attempt its open breaker refused."""


@dataclass(slots=True)
class Prepared:
    """An attempt about to run its body (`TaskRunner.prepare`)."""

    claimed: TaskRecord
    activity: RegisteredActivity
    started: datetime
    budget: float | None
    probe: bool
    cancel: AttemptCancel
    ctx: ActivityContext
    args: tuple[Any, ...]
    early: AttemptResult | None = None
    """The outcome when the arguments did not convert: the body does not run."""


class TaskRunner:
    """Runs one claimed task attempt and writes its outcome in one transaction."""

    def __init__(
        self,
        store: DurableStore,
        registry: Registry,
        attempts: RunningAttempts | None = None,
    ) -> None:
        self.store = store
        self.registry = registry
        # Where a cancel finds a running body (runtime/attempts.py).
        self.attempts = RunningAttempts() if attempts is None else attempts
        # Each run's workflow name, for its activities' contexts.
        self.names = RunNames(store)

    async def run(self, task: TaskRecord, clock: Clock) -> bool:
        """Run one attempt of `task`; False when it was gone or not ready."""
        self.activity(task)
        claimed = self.store.claim_task(task.id, clock())
        if claimed is None:
            return False
        self.record(await self.execute(claimed, clock))
        return True

    def activity(self, task: TaskRecord) -> RegisteredActivity:
        """The task's registered activity; UnknownActivity when this runtime lacks it."""
        activity = self.registry.activities.get(task.activity_name)
        if activity is None:
            raise UnknownActivity(
                name=task.activity_name, registered=self.registry.activities
            )
        return activity

    async def execute(self, claimed: TaskRecord, clock: Clock) -> Finished:
        """Run the body of a claimed task outside any transaction; its unrecorded outcome."""
        prepared = self.prepare(claimed, clock)
        if isinstance(prepared, Finished):
            return prepared
        try:
            result = prepared.early
            if result is None:
                result = await intercepted_attempts.attempt(
                    self.registry,
                    self.store,
                    claimed,
                    lambda: self.names.of(claimed.exec_id),
                    (prepared.activity, prepared.args),
                    (prepared.budget, prepared.cancel),
                    prepared.started,
                )
        finally:
            self.attempts.finish(claimed)
        return self.conclude(prepared, result, clock)

    def prepare(self, claimed: TaskRecord, clock: Clock) -> Prepared | Finished:
        """Everything before an attempt's body: its budget, its breaker's turn, its context.

        A `Finished` when the body does not run (no budget left, an open
        breaker); otherwise the attempt is started (`RunningAttempts`) and
        the caller finishes it once the body has run (`execute`, or
        plain_bodies.py for a plain body of a pass).
        """
        activity = self.activity(claimed)
        started = clock()
        budget = budget_of(claimed, activity, started)
        if claimed.local:
            budget = local_activities.budget(
                claimed, self.store.execution(claimed.exec_id), started
            )
        if budget is not None and budget <= 0:
            result = AttemptResult(
                ok=False,
                error=ErrorInfo(
                    type="ScheduleToCloseTimeout",
                    message=f"activity {claimed.activity_name} ran past its schedule_to_close",
                    non_retryable=True,
                ),
            )
            return Finished(claimed, activity, result, started, clock())
        probe = False
        if activity.circuit_breaker is not None:
            turn = breakers.turn(
                self.store, claimed.activity_name, activity.circuit_breaker, started
            )
            if not turn.run:  # open: fail fast, the body does not run
                result = AttemptResult(ok=False, error=turn.error(activity.name))
                return Finished(
                    claimed, activity, result, started, clock(), not_before=turn.until
                )
            probe = turn.probe
        cancel = self.attempts.start(claimed)
        try:
            ctx = self._context(claimed, cancel)
        except BaseException:
            self.attempts.finish(claimed)
            raise
        try:
            args = self._args(activity, claimed, ctx)
        except Exception as exc:  # noqa: BLE001 - e.g. an input that does not fit its dataclass
            # Fails like the body raising it, so the claimed task never stays RUNNING.
            early = AttemptResult(ok=False, error=error_info(exc))
            return Prepared(
                claimed, activity, started, budget, probe, cancel, ctx, (), early
            )
        return Prepared(claimed, activity, started, budget, probe, cancel, ctx, args)

    @staticmethod
    def conclude(prepared: Prepared, result: AttemptResult, clock: Clock) -> Finished:
        """The attempt's outcome once its body ran (and `RunningAttempts` finished it)."""
        activity = prepared.activity
        if result.ok and activity.mode == "ledger":
            result = split_ledger(result)
        elif result.ok and activity.mode == "context" and prepared.ctx.llm_calls:
            result = AttemptResult(
                ok=True, output=result.output, llm_calls=list(prepared.ctx.llm_calls)
            )
        return Finished(
            prepared.claimed,
            activity,
            result,
            prepared.started,
            clock(),
            probe=prepared.probe,
        )

    def record(self, finished: Finished, txn: WriteTxn | None = None) -> bool:
        """Write an attempt's outcome in its own transaction, or in `txn` (a batch's).

        Returns whether the run now has something to decide (an appended
        completion or failure), not a rescheduled retry or a task gone.
        """
        if txn is None:
            with self.store.write() as own:
                return self._record_in(own, finished)
        return self._record_in(txn, finished)

    def time_out_waiting(self, txn: WriteTxn, task_id: int, now: datetime) -> None:
        """Record a waiting attempt TIMED_OUT (SCHEDULE_TO_START); the retry policy goes on.

        The gatekeeper (runtime/flow/) calls it in its gate's transaction for
        an attempt that waited for a slot past its activity's schedule_to_start.
        """
        task = txn.task(task_id)
        if task is None:
            return
        activity = self.activity(task)
        limit = activity.limits.schedule_to_start if activity.limits else None
        result = gates.waited_too_long(task.activity_name, task.ready_at, limit, now)
        self._record_in(txn, Finished(task, activity, result, task.ready_at, now))

    def _context(self, task: TaskRecord, cancel: AttemptCancel) -> ActivityContext:
        heartbeat = payloads.loads(task.heartbeat) if task.heartbeat else None
        previous = (
            ErrorInfo.from_json(payloads.loads(task.last_error))
            if task.last_error
            else None
        )
        return ActivityContext(
            ActivityRunInfo(
                exec_id=task.exec_id,
                activity_name=task.activity_name,
                attempt=task.attempt,
                max_attempts=task.max_attempts,
                queue=task.queue,
                task_id=task.id,
                activity_id=task.activity_id,
                workflow_name=self.names.of(task.exec_id),
            ),
            idempotency_key=task.idempotency_key,
            heartbeat_details=heartbeat,
            previous_failure=previous,
            save_heartbeat=lambda text: self.store.save_heartbeat(task.id, text),
            cancel=cancel,
        )

    @staticmethod
    def _args(
        activity: RegisteredActivity, task: TaskRecord, ctx: ActivityContext
    ) -> tuple[Any, ...]:
        value = payloads.loads(task.input)
        if activity.mode == "context":
            return (ctx, payloads.from_json(value, activity.input_type))
        return (value,)

    def _record_in(self, txn: WriteTxn, finished: Finished) -> bool:
        task, result = finished.task, finished.result
        started, ended = finished.started, finished.ended
        # Not committed: the claim is released (not stranded), the next pass reruns it.
        txn.on_rollback(lambda: self.store.release_claim(task.id))
        # A local attempt's record reads the task's row as it is now; for
        # the others the task's own write below says whether it is there.
        current = txn.task(task.id) if task.local else task
        if current is None:
            return False  # the run was sealed while the body ran
        row = txn.execution(task.exec_id)
        if row is None or row.state != "RUNNING":
            # Sealed while the body ran: SQLite may have given its id to a new task.
            mine = current if task.local else txn.task(task.id)
            if mine is not None and mine.exec_id == task.exec_id:
                txn.delete_task(task.id)
            return False
        error_text = (
            None if result.error is None else payloads.dumps(result.error.to_json())
        )
        outcome = (
            "COMPLETED"
            if result.ok
            else (
                "TIMED_OUT"
                if result.timed_out
                else ("CANCELLED" if result.cancelled else "FAILED")
            )
        )
        error = (
            None
            if result.ok
            else (result.error or ErrorInfo(type="Error", message="failed"))
        )
        ready_at = None if error is None else retry_at(task, error, ended)
        wait = breakers.not_before(error, finished.not_before)
        if ready_at is not None and wait is not None and ready_at < wait:
            # A refused attempt's retry waits for the cooldown, within its budget.
            late = task.schedule_to_close_at
            ready_at = None if late is not None and wait >= late else wait
        if not task.local:
            # The task's own write says whether it is still there (a run
            # sealed while the body ran took it), with no read first.
            if ready_at is None:
                kept = txn.delete_task(task.id)
            else:
                kept = txn.reschedule_task(
                    task.id, task.attempt + 1, ready_at, error_text or ""
                )
                if kept and self.registry.gate(finished.activity) is not None:
                    # The retry waits for a slot (and a token) again (runtime/flow/).
                    txn.flow().hold_task(task.id)
            if not kept:
                return False
        txn.record_attempt(
            AttemptRecord(
                exec_id=task.exec_id,
                activity_id=task.activity_id,
                activity_name=task.activity_name,
                attempt=task.attempt,
                started_at=started,
                ended_at=ended,
                outcome=outcome,
                error=error_text,
            )
        )
        breaker = finished.activity.circuit_breaker
        if breaker is not None:
            breakers.record(
                txn,
                task.activity_name,
                breaker,
                failed=error is not None,
                probe=finished.probe,
                error_type="" if error is None else error.type,
                now=ended,
            )
        if error is not None:
            log_failed_attempt(
                exec_id=task.exec_id,
                workflow_id=row.workflow_id,
                workflow_name=row.workflow_name,
                activity=task.activity_name,
                attempt=task.attempt,
                error=error,
            )
        if task.local:
            local_activities.record(txn, current, row, result, ended)
            return True
        if ready_at is not None:
            return False  # rescheduled: nothing for the run to decide yet
        if error is None:
            txn.add_ledger(
                [ledger_entry(task, call, ended) for call in result.llm_calls]
            )
            event = HistoryEvent(
                seq=row.next_seq,
                type="ActivityCompleted",
                at=ended,
                attrs={
                    "activity_id": task.activity_id,
                    "name": task.activity_name,
                    "result": result.output,
                    "attempt": task.attempt,
                },
            )
        else:
            event = HistoryEvent(
                seq=row.next_seq,
                type="ActivityFailed",
                at=ended,
                attrs={
                    "activity_id": task.activity_id,
                    "name": task.activity_name,
                    "error": error.to_json(),
                    "attempt": task.attempt,
                },
            )
        txn.append_events(task.exec_id, [event], needs_decision=1)
        return True


__all__ = ["Finished", "TaskRunner", "timedelta"]
