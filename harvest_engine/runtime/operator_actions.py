"""The runtime's operator actions: schedules, retention, cancel and terminate.

They are `SqliteRuntime` methods, written here so the facade stays a short
table of its surface; the class binds each function as its method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.runtime import cancel as cancel_requests
from harvest_engine.runtime import retention, schedule_actions, schedules
from harvest_engine.schedules import WorkflowSchedule
from harvest_engine.states import ExecutionId

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.durations import Duration
    from harvest_engine.runtime.runtime import SqliteRuntime
    from harvest_engine.store.operations import ScheduleRow


def upsert_schedule(self: SqliteRuntime, schedule: WorkflowSchedule) -> ScheduleRow:
    """Store a schedule (keyed by workflow name); the same spec keeps its slot and pause.

    Raises:
        UnknownWorkflow: this runtime has no such workflow registered (a
            misspelt name would be stored and never fire); nothing is written.
    """
    if isinstance(schedule, WorkflowSchedule):
        self.registry.workflow(schedule.workflow_name)
    return self._woken(schedules.upsert(self._store, schedule, self.clock.now()))


def pause_schedule(self: SqliteRuntime, workflow_name: str) -> bool:
    """Stop a schedule's fires; False when there is no such schedule."""
    return schedules.pause(self._store, workflow_name, self.clock.now())


def resume_schedule(self: SqliteRuntime, workflow_name: str) -> bool:
    """Fire again from the next slot after now; False when there is no such schedule."""
    return self._woken(schedules.resume(self._store, workflow_name, self.clock.now()))


def delete_schedule(self: SqliteRuntime, workflow_name: str) -> bool:
    """Remove a schedule (its runs keep running); False when there was none."""
    return schedules.delete(self._store, workflow_name)


def trigger_schedule(self: SqliteRuntime, workflow_name: str) -> ExecutionId | None:
    """Start one run of the schedule now; None when its overlap policy skips it.

    Raises:
        ScheduleNotFound: no schedule for `workflow_name`.
        UnknownWorkflow: the workflow is not registered.
    """
    exec_id = schedule_actions.trigger(
        self._store,
        workflow_name,
        self.clock.now(),
        schedules.runtime_starter(self),
    )
    return None if exec_id is None else ExecutionId(exec_id)


def backfill_schedule(
    self: SqliteRuntime, workflow_name: str, start: datetime, end: datetime
) -> list[ExecutionId]:
    """Start a run for each slot from `start` to `end` (both included), oldest first.

    Each run has its slot's workflow id; slots that already have a run are
    skipped, and so are slots a ``skip`` schedule's overlap policy drops.
    See `schedule_actions.backfill` for the errors.
    """
    started = schedule_actions.backfill(
        self._store,
        workflow_name,
        start,
        end,
        self.clock.now(),
        schedules.runtime_starter(self),
    )
    return [ExecutionId(exec_id) for exec_id in started]


def list_schedules(self: SqliteRuntime) -> list[ScheduleRow]:
    """Every stored schedule, by workflow name."""
    return self._store.list_schedules()


def purge_terminal(self: SqliteRuntime, older_than: Duration) -> int:
    """Remove terminal runs closed more than `older_than` ago, 256 per transaction."""
    return retention.purge_terminal(self._store, older_than, self.clock.now())


def cancel(self: SqliteRuntime, exec_id: str | ExecutionId, reason: str = "") -> None:
    """Request a cooperative cancel; the next drive replays the body with the reason.

    The body sees ``ctx.cancellation_reason()`` from the start of that
    replay and may run cleanup activities; the run then ends CANCELLED.
    A repeat cancel keeps the first reason; a blank reason
    gets a default text. The request is stored, so it survives a reopen.

    Raises:
        ExecutionNotFound: no run has this id.
        WorkflowNotRunning: the run is terminal.
        TypeError: the reason is neither text nor None.
    """
    cancel_requests.request_cancel(
        self._store, self.cache, self._require(exec_id), reason, self.clock.now()
    )
    self.waker.wake()


def terminate(
    self: SqliteRuntime, exec_id: str | ExecutionId, reason: str = ""
) -> None:
    """End a run TERMINATED at once, in one transaction; its body does not run again.

    Appends WorkflowCancelled {reason, imposed}, drops its open rows (keyed signals
    stay), drops a pending cancel request and applies the parent-close
    policy of its detached children. A blank reason gets a default text.

    Raises:
        ExecutionNotFound: no run has this id.
        WorkflowNotRunning: the run is terminal.
        TypeError: the reason is neither text nor None.
    """
    cancel_requests.terminate(
        self._store, self.cache, self._require(exec_id), reason, self.clock.now()
    )
    self.waker.wake()
