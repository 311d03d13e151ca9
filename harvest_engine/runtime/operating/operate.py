"""Operator actions over the Engine: schedules, retention, cancel and terminate.

`Runtime`'s calls of the same names are one line into these (their docs are
the facade's); client commands applied by the serving loop call them too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.runtime.deciding import cancel as cancel_requests
from harvest_engine.runtime.operating import retention, schedule_actions, schedules
from harvest_engine.schedules import WorkflowSchedule
from harvest_engine.states import ExecutionId

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.durations import Duration
    from harvest_engine.runtime.engine import Engine
    from harvest_engine.store.operations import ScheduleRow


def upsert_schedule(engine: Engine, schedule: WorkflowSchedule) -> ScheduleRow:
    """Store a schedule (keyed by workflow name); the same spec keeps its slot and pause."""
    if isinstance(schedule, WorkflowSchedule):
        engine.registry.workflow(
            schedule.workflow_name
        )  # UnknownWorkflow, nothing stored
    return engine.woken(schedules.upsert(engine.store, schedule, engine.clock.now()))


def pause_schedule(engine: Engine, workflow_name: str) -> bool:
    """Stop a schedule's fires; False when there is no such schedule."""
    return schedules.pause(engine.store, workflow_name, engine.clock.now())


def resume_schedule(engine: Engine, workflow_name: str) -> bool:
    """Fire again from the next slot after now; False when there is no such schedule."""
    return engine.woken(
        schedules.resume(engine.store, workflow_name, engine.clock.now())
    )


def delete_schedule(engine: Engine, workflow_name: str) -> bool:
    """Remove a schedule (its runs keep running); False when there was none."""
    return schedules.delete(engine.store, workflow_name)


def trigger_schedule(engine: Engine, workflow_name: str) -> ExecutionId | None:
    """Start one run of the schedule now; None when its overlap policy skips it."""
    exec_id = schedule_actions.trigger(
        engine.store,
        workflow_name,
        engine.clock.now(),
        schedules.runtime_starter(engine),
    )
    return None if exec_id is None else ExecutionId(exec_id)


def backfill_schedule(
    engine: Engine, workflow_name: str, start: datetime, end: datetime
) -> list[ExecutionId]:
    """Start a run for each slot from `start` to `end` (both included), oldest first."""
    started = schedule_actions.backfill(
        engine.store,
        workflow_name,
        start,
        end,
        engine.clock.now(),
        schedules.runtime_starter(engine),
    )
    return [ExecutionId(exec_id) for exec_id in started]


def list_schedules(engine: Engine) -> list[ScheduleRow]:
    """Every stored schedule, by workflow name."""
    return engine.store.list_schedules()


def purge_terminal(engine: Engine, older_than: Duration) -> int:
    """Remove terminal runs closed more than `older_than` ago, 256 per transaction."""
    return retention.purge_terminal(engine.store, older_than, engine.clock.now())


def cancel(engine: Engine, exec_id: str | ExecutionId, reason: str = "") -> None:
    """Request a cooperative cancel; the next drive replays the body with the reason."""
    cancel_requests.request_cancel(
        engine.store, engine.ends, engine.require(exec_id), reason, engine.clock.now()
    )
    engine.waker.wake()


def terminate(engine: Engine, exec_id: str | ExecutionId, reason: str = "") -> None:
    """End a run TERMINATED at once, in one transaction; its body does not run again."""
    cancel_requests.terminate(
        engine.store, engine.ends, engine.require(exec_id), reason, engine.clock.now()
    )
    engine.waker.wake()
