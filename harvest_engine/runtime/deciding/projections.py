"""Writing a cycle down: its events, the rows they project, and the seal.

Everything a cycle decided lands here in its transaction: the history
events, the activity and timer rows they schedule, the memo and search
attribute projections, progress rows (events, streams, current details),
log lines, and the seal of a run that ended.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.runtime.deciding import children, headers, local_activities
from harvest_engine.runtime.deciding.attempt_cancels import cancel_activity
from harvest_engine.runtime.deciding.progress_rows import (
    PROGRESS_EVENTS,
    project_progress,
)
from harvest_engine.runtime.deciding.run_metadata import project_memo
from harvest_engine.store.rows import ExecutionRecord, NewTask

if TYPE_CHECKING:
    from harvest_engine.events import HistoryEvent
    from harvest_engine.runtime.deciding.cycle import Cycle, Decision
    from harvest_engine.runtime.deciding.run_ends import RunEnds
    from harvest_engine.runtime.registry import Registry
    from harvest_engine.runtime.settings import Settings
    from harvest_engine.workflow.instance import WorkflowInstance


class Projections:
    """Writes a cycle's events and projection rows (the `Decider` holds one)."""

    def __init__(self, registry: Registry, ends: RunEnds, settings: Settings) -> None:
        self.registry = registry
        self.ends = ends
        self.settings = settings

    def record(
        self,
        cycle: Cycle,
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
            progress = instance.progress
            changed, details = progress.take_details()
            if changed:
                txn.set_current_details(exec_id, details)
                txn.on_rollback(progress.details_unwritten)
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
                txn,
                exec_id,
                state,
                cycle.now,
                self.ends,
                parent=row.parent_exec_id,
                **values,
            )

    def _project(self, cycle: Cycle, event: HistoryEvent) -> None:
        txn, row, now = cycle.txn, cycle.row, cycle.now
        attrs = event.attrs
        if event.type == "ActivityScheduled":
            task = self._task(row, attrs, now)
            if self.registry.gated(task.activity_name):
                # Waits for a slot of its queue (runtime/flow/gates.py).
                txn.flow().hold_task(txn.add_task(task))
            elif cycle.claimed is not None:
                cycle.claimed.append(txn.add_claimed_task(task, now))
            else:
                txn.add_task(task)
            # The deciding interceptors' context travels with the task.
            headers.store_activity(
                txn, row.exec_id, int(attrs["activity_id"]), self.registry.header_memory
            )
        elif event.type == "LocalActivityScheduled":
            txn.add_task(local_activities.new_task(self.registry, row, attrs, now))
        elif event.type == "ActivityCancelRequested":
            reason = "the workflow cancelled the activity"
            activity_id = int(attrs["activity_id"])
            cancel_activity(txn, row.exec_id, activity_id, reason, now)
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
        elif event.type in PROGRESS_EVENTS:
            project_progress(txn, row.exec_id, event)

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
