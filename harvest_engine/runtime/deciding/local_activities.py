"""Local activities: a task row run inline after the decision, with its own events.

LocalActivityScheduled inserts a local task. Each failed attempt appends
LocalActivityFailed; a retry's backoff ends the cycle (a drive before it
returns WaitingTimer) and a pending cancel skips the wait. Success appends
LocalActivityCompleted; a terminal failure also appends
LocalActivityExhausted, which fails the workflow's await. An attempt's
budget is `start_to_close`, capped at 60 s, and the workflow deadline: an
attempt that ends past the deadline records nothing and the run times out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.authoring import RetryPolicy
from harvest_engine.events import HistoryEvent
from harvest_engine.states import ErrorInfo
from harvest_engine.store.rows import ExecutionRecord, NewTask, TaskRecord
from harvest_engine.workflow.defaults import LOCAL_ACTIVITY_BUDGET_SECONDS

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.activity import AttemptResult
    from harvest_engine.runtime.registry import Registry
    from harvest_engine.store.txn_protocol import WriteTxn


def new_task(
    registry: Registry, row: ExecutionRecord, attrs: dict[str, Any], now: datetime
) -> NewTask:
    """The task row of a LocalActivityScheduled event."""
    activity = registry.activity(str(attrs["name"]))
    retry = attrs.get("retry")
    if retry is None and activity.retry is not None:
        retry = activity.retry.to_json()
    max_attempts = (
        activity.max_attempts if retry is None else int(retry["max_attempts"])
    )
    declared = attrs.get("start_to_close", activity.start_to_close)
    budget = LOCAL_ACTIVITY_BUDGET_SECONDS if declared is None else float(declared)
    return NewTask(
        exec_id=row.exec_id,
        activity_id=int(attrs["activity_id"]),
        activity_name=activity.name,
        input=payloads.dumps(attrs.get("input")),
        queue=activity.queue,
        max_attempts=max_attempts,
        ready_at=now,
        retry_policy=None if retry is None else payloads.dumps(retry),
        start_to_close=min(budget, LOCAL_ACTIVITY_BUDGET_SECONDS),
        schedule_to_close_at=None,
        idempotency_key=f"{row.exec_id}:{attrs['activity_id']}",
        local=True,
    )


def budget(task: TaskRecord, row: ExecutionRecord | None, now: datetime) -> float:
    """Seconds one attempt may run: start_to_close (at most 60 s), bounded by the deadline."""
    seconds = min(
        task.start_to_close or LOCAL_ACTIVITY_BUDGET_SECONDS,
        LOCAL_ACTIVITY_BUDGET_SECONDS,
    )
    if row is not None and row.deadline is not None:
        seconds = min(seconds, (row.deadline - now).total_seconds())
    return seconds


def record(
    txn: WriteTxn,
    task: TaskRecord,
    row: ExecutionRecord,
    result: AttemptResult,
    ended: datetime,
) -> None:
    """Append the attempt's events; reschedule a retry or drop the finished task."""
    if row.deadline is not None and ended >= row.deadline:
        # Past the deadline: no result; the next cycle times the run out.
        txn.update_execution(task.exec_id, needs_decision=1)
        return
    base = {
        "activity_id": task.activity_id,
        "name": task.activity_name,
        "attempt": task.attempt,
    }
    seq = row.next_seq
    if result.ok:
        events = [
            HistoryEvent(
                seq, "LocalActivityCompleted", ended, {**base, "result": result.output}
            )
        ]
        txn.append_events(task.exec_id, events, needs_decision=1)
        txn.delete_task(task.id)
        return
    error = result.error or ErrorInfo(type="Error", message="failed")
    events = [
        HistoryEvent(
            seq, "LocalActivityFailed", ended, {**base, "error": error.to_json()}
        )
    ]
    ready_at = _retry_at(task, error, ended, row)
    if ready_at is None:
        events.append(
            HistoryEvent(
                seq + 1,
                "LocalActivityExhausted",
                ended,
                {**base, "error": error.to_json()},
            )
        )
        txn.delete_task(task.id)
    else:
        txn.reschedule_task(
            task.id, task.attempt + 1, ready_at, payloads.dumps(error.to_json())
        )
    txn.append_events(task.exec_id, events, needs_decision=1)


def _retry_at(
    task: TaskRecord, error: ErrorInfo, ended: datetime, row: ExecutionRecord
) -> datetime | None:
    if task.retry_policy is None:
        return None
    policy = RetryPolicy.from_json(payloads.loads(task.retry_policy))
    if not policy.retries(task.attempt, error.type, error.non_retryable):
        return None
    if row.cancel_reason is not None:
        return ended  # a pending cancel skips the wait (guide §7)
    return ended + policy.backoff(task.attempt)
