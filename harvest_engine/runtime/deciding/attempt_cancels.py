"""Cancel the attempts of a run: the claimed ones, announced so their bodies stop.

The one call every way of stopping work takes (a run's cancel, terminate,
a reset, an `ActivityHandle`'s cancel): inside the write that stops the
run, before its tasks go, it names the run's claimed attempts; the store
announces them when that write commits (`runtime/attempts.py`). Tasks not
claimed yet are left to that write (a cancelled run may still run cleanup
activities; a sealed run's tasks are deleted with it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.store.rows import AttemptKey
    from harvest_engine.store.txn_protocol import WriteTxn


def cancel_attempts(
    txn: WriteTxn, exec_id: str, reason: str, *, activity_id: int | None = None
) -> int:
    """Announce the cancel of `exec_id`'s claimed attempts (of one activity, or all); how many.

    Call it inside the transaction that stops the run, before it deletes
    the run's tasks; nothing is announced if that transaction rolls back.
    """
    named = [
        (exec_id, task.activity_id, task.attempt)
        for task in txn.tasks_of(exec_id)
        if task.status == "RUNNING"
        and (activity_id is None or task.activity_id == activity_id)
    ]
    if named:
        txn.announce_cancels(named, reason)
    return len(named)


def cancel_activity(
    txn: WriteTxn, exec_id: str, activity_id: int, reason: str, now: datetime
) -> None:
    """An `ActivityHandle`'s cancel (ActivityCancelRequested): its attempt ends cancelled.

    A running body is cancelled; a waiting task (its first attempt not
    claimed yet, or a retry in backoff) is made ready now and announced
    too, so it starts cancelled: the attempt records ActivityCancelled
    without running the body, and the run hears of it as of any attempt
    (a process that starts it more than a minute later, or after a restart,
    runs it: at-least-once).
    """
    named: list[AttemptKey] = []
    for task in txn.tasks_of(exec_id):
        if task.activity_id != activity_id or task.local:
            continue
        if task.status != "RUNNING" and task.ready_at > now:
            txn.reschedule_task(task.id, task.attempt, now, task.last_error or "")
        named.append((exec_id, task.activity_id, task.attempt))
    if named:
        txn.announce_cancels(named, reason)
