"""An attempt's rules beside its body: its time budget, its retry time, a ledger body's result.

The pure parts of running an activity task (tasks.py), read by its prepare
and record steps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine import payloads
from harvest_engine.activity import AttemptResult, wrong_shape
from harvest_engine.authoring import RetryPolicy
from harvest_engine.ledger import LlmCall
from harvest_engine.store.rows import LedgerEntry

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.runtime.registry import RegisteredActivity
    from harvest_engine.states import ErrorInfo
    from harvest_engine.store.rows import TaskRecord


def budget_of(
    task: TaskRecord, activity: RegisteredActivity, now: datetime
) -> float | None:
    """Seconds this attempt may run: start_to_close, bounded by schedule_to_close."""
    budget = task.start_to_close
    if task.schedule_to_close_at is not None:
        left = (task.schedule_to_close_at - now).total_seconds()
        budget = left if budget is None else min(budget, left)
    del activity
    return budget


def retry_at(task: TaskRecord, error: ErrorInfo, ended: datetime) -> datetime | None:
    """When the next attempt runs, or None when this failure is final."""
    if task.retry_policy is None:
        return None
    policy = RetryPolicy.from_json(payloads.loads(task.retry_policy))
    if not policy.retries(task.attempt, error.type, error.non_retryable):
        return None
    ready_at = ended + policy.backoff(task.attempt)
    if task.schedule_to_close_at is not None and ready_at >= task.schedule_to_close_at:
        return None
    return ready_at


LEDGER_SHAPE = "a ledger body returns (output, [LlmCall, ...])"


def split_ledger(result: AttemptResult) -> AttemptResult:
    """A ledger body's `(output, [LlmCall, ...])` as the output and its calls."""
    value = result.output
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 2
        or not isinstance(value[1], (list, tuple))
    ):
        return wrong_shape(LEDGER_SHAPE)
    try:
        calls = [c if isinstance(c, LlmCall) else LlmCall(**c) for c in value[1]]
    except TypeError as exc:
        return wrong_shape(f"{LEDGER_SHAPE}: {exc}")
    return AttemptResult(ok=True, output=value[0], llm_calls=calls)


def ledger_entry(task: TaskRecord, call: LlmCall, at: datetime) -> LedgerEntry:
    """One model call of an attempt, as the ledger stores it."""
    return LedgerEntry(
        exec_id=task.exec_id,
        activity=task.activity_name,
        attempt=task.attempt,
        model=call.model,
        input_tokens=call.input_tokens,
        output_tokens=call.output_tokens,
        latency=call.latency,
        recorded_at=at,
    )
