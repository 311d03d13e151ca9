"""Cancel (cooperative) and terminate (at once): the requests and every way they end a run.

`cancel` stores the request and appends no event. The next cycle replays
the body with `ctx.cancellation_reason()` set from its start, so cleanup
activities can run. The run ends CANCELLED when the body ends (any way),
when it parks with no activity task left to run, when a cycle meets an
error that would repeat on every drive (divergence, an unregistered name, a
stuck cycle), or when 1,000 events have been added since the request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine import payloads
from harvest_engine.errors import (
    ExecutionNotFound,
    NonDeterminismDetected,
    Stuck,
    UnknownActivity,
    UnknownWorkflow,
    WorkflowNotRunning,
)
from harvest_engine.events import HistoryEvent
from harvest_engine.runtime.deciding.attempt_cancels import cancel_attempts
from harvest_engine.runtime.deciding.children import (
    ending_error,
    hard_seal,
    seal_run,
)
from harvest_engine.runtime.settings import HistoryCapReached, Settings
from harvest_engine.states import ErrorInfo

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from harvest_engine.runtime.deciding.run_ends import RunEnds
    from harvest_engine.runtime.registry import Registry
    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.store.rows import ExecutionRecord
    from harvest_engine.store.txn_protocol import WriteTxn

DEFAULT_CANCEL_REASON = "cancelled by request"
DEFAULT_TERMINATE_REASON = "terminated by request"

# Events a run may add after a cancel request before the seal (API.md defaults).
CLEANUP_BUDGET = 1_000


class CleanupBudgetReached(Exception):
    """A cancelled run's cycle reached the cleanup budget: it rolls back and the run ends CANCELLED."""


def _reason(reason: str | None, default: str) -> str:
    if reason is not None and not isinstance(reason, str):
        # Refused before the write: str() of bytes or a number would store
        # a reason nobody wrote ("b'...'", "123").
        raise TypeError(
            f"a cancel or terminate reason is text or None, got {type(reason).__name__}"
        )
    text: str = payloads.check_value(reason or "", "reason")
    return text if text.strip() else default


def _running(txn: WriteTxn, exec_id: str) -> ExecutionRecord:
    row = txn.execution(exec_id)
    if row is None:
        raise ExecutionNotFound(exec_id=exec_id)
    if row.state not in ("RUNNING", "ENQUEUED"):
        raise WorkflowNotRunning(exec_id=exec_id, state=row.state)
    return row


def request_cancel(
    store: DurableStore,
    ends: RunEnds,
    exec_id: str,
    reason: str | None,
    now: datetime,
) -> None:
    """Store a cooperative cancel request; a repeat request keeps the first reason."""
    text = _reason(reason, DEFAULT_CANCEL_REASON)
    with store.write() as txn:
        row = _running(txn, exec_id)
        if row.state == "ENQUEUED":
            # Its body never ran: nothing to clean up, it ends at once.
            txn.flow().drop_wait(exec_id)
            hard_seal(txn, exec_id, "CANCELLED", text, now, ends)
            return
        if row.cancel_reason is None:
            txn.update_execution(exec_id, cancel_reason=text, cancel_seq=row.next_seq)
            # Its running bodies stop; activities it starts from now on run.
            cancel_attempts(txn, exec_id, f"the run was cancelled: {text}")
        txn.update_execution(exec_id, needs_decision=1)
        # A retry in backoff runs at once: the body sees the request sooner.
        txn.expedite_local_tasks(exec_id, now)
    # The body sees the request from the start of its replay, not mid-way.
    ends.evict(exec_id)


def terminate(
    store: DurableStore,
    ends: RunEnds,
    exec_id: str,
    reason: str | None,
    now: datetime,
) -> None:
    """End a RUNNING run TERMINATED in one transaction; its body does not run again."""
    text = _reason(reason, DEFAULT_TERMINATE_REASON)
    with store.write() as txn:
        if _running(txn, exec_id).state == "ENQUEUED":
            txn.flow().drop_wait(exec_id)
        txn.update_execution(exec_id, cancel_reason=None, cancel_seq=None)
        hard_seal(txn, exec_id, "TERMINATED", text, now, ends)


def budget_reached(row: ExecutionRecord, new_events: int) -> bool:
    """Whether a cancelled run's cycle reaches the cleanup budget with `new_events` appends."""
    if row.cancel_reason is None or row.cancel_seq is None:
        return False
    added = row.next_seq + new_events - row.cancel_seq
    return added >= CLEANUP_BUDGET


def runnable_tasks_left(txn: WriteTxn, exec_id: str, registry: Registry) -> bool:
    """Whether a cancelled, parked run still has an activity task a drive can run.

    An unregistered activity's task would fail every drive, so it counts as
    none: the run then ends CANCELLED.
    """
    tasks = txn.tasks_of(exec_id)
    if any(task.activity_name not in registry.activities for task in tasks):
        return False
    return bool(tasks)


def seal_cancelled(
    txn: WriteTxn,
    exec_id: str,
    now: datetime,
    registry: Registry,
    settings: Settings,
    ends: RunEnds,
) -> str:
    """End a cancelled run: a failure for each pending task, then WorkflowCancelled; its reason.

    The failures (CancelSealed, or UnregisteredActivity for an activity this
    runtime does not know) let a body that awaits the task replay. They must
    fit the history caps but not the cleanup budget; when they would reach a
    cap, only WorkflowCancelled is added.
    """
    row = txn.execution(exec_id)
    if row is None:
        raise ExecutionNotFound(exec_id=exec_id)
    reason = row.cancel_reason or DEFAULT_CANCEL_REASON
    cancel_attempts(txn, exec_id, f"the run was cancelled: {reason}")
    failures = [
        _failure(
            task.activity_id,
            task.activity_name,
            task.attempt,
            task.local,
            registry,
            reason,
        )
        for task in txn.tasks_of(exec_id)
    ]
    events = _numbered(row.next_seq, now, failures)
    try:
        settings.check_caps(
            row, [*events, HistoryEvent(0, "WorkflowCancelled", now)], None
        )
    except HistoryCapReached:
        events = []
    events.append(
        HistoryEvent(
            seq=row.next_seq + len(events),
            type="WorkflowCancelled",
            at=now,
            attrs={"reason": reason},
        )
    )
    txn.append_events(exec_id, events)
    seal_run(
        txn, exec_id, "CANCELLED", now, ends, error=ending_error("CANCELLED", reason)
    )
    return reason


def seal_cancelled_after(
    store: DurableStore,
    exec_id: str,
    now: datetime,
    registry: Registry,
    settings: Settings,
    ends: RunEnds,
) -> str | None:
    """After a rolled-back cycle of a cancelled run: seal it CANCELLED in a new transaction.

    Returns the reason, or None when the run has no pending cancel (the
    caller then handles the error as without a cancel).
    """
    with store.write() as txn:
        row = txn.execution(exec_id)
        if row is None or row.state != "RUNNING" or row.cancel_reason is None:
            return None
        return seal_cancelled(txn, exec_id, now, registry, settings, ends)


def ends_on_error(error: BaseException) -> bool:
    """Errors that end a cancelled run CANCELLED instead of reaching the caller."""
    return isinstance(
        error,
        (
            NonDeterminismDetected,
            Stuck,
            UnknownActivity,
            UnknownWorkflow,
            HistoryCapReached,
            CleanupBudgetReached,
        ),
    )


def _failure(
    activity_id: int,
    name: str,
    attempt: int,
    local: bool,
    registry: Registry,
    reason: str,
) -> tuple[str, dict[str, object]]:
    if name in registry.activities:
        error = ErrorInfo(
            type="CancelSealed",
            message=f"the run was cancelled ({reason}) before activity {name} finished",
            non_retryable=True,
        )
    else:
        error = ErrorInfo(
            type="UnregisteredActivity",
            message=f"activity {name!r} is not registered; the cancelled run dropped its task",
            non_retryable=True,
        )
    type_ = "LocalActivityExhausted" if local else "ActivityFailed"
    # The same shape as a worker-written failure, attempt included: the
    # attempt the dropped task was due to run.
    return type_, {
        "activity_id": activity_id,
        "name": name,
        "error": error.to_json(),
        "attempt": attempt,
    }


def _numbered(
    first: int, now: datetime, items: Sequence[tuple[str, dict[str, object]]]
) -> list[HistoryEvent]:
    return [
        HistoryEvent(seq=first + i, type=type_, at=now, attrs=dict(attrs))
        for i, (type_, attrs) in enumerate(items)
    ]


__all__ = [
    "CLEANUP_BUDGET",
    "DEFAULT_CANCEL_REASON",
    "DEFAULT_TERMINATE_REASON",
    "CleanupBudgetReached",
    "request_cancel",
    "seal_cancelled",
    "terminate",
]
