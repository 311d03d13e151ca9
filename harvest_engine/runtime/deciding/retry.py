"""Workflow retry: a retryable failure starts the next attempt in the same transaction.

The policy is frozen on the run's row at start. The retry has its own exec
id as its workflow id, the same input and the next attempt number; it gets
every signal of the failed run again and waits for its backoff (a drive
before then returns WaitingTimer). A panic, a divergence, a cap, a timeout,
a cancel and a non-retryable error never retry: only an error the body
raised reaches this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from harvest_engine import payloads
from harvest_engine.authoring import RetryPolicy
from harvest_engine.interceptors import SIGNAL
from harvest_engine.runtime.deciding import enqueue
from harvest_engine.runtime.deciding.runs import start_run
from harvest_engine.states import ErrorInfo, ExecutionId
from harvest_engine.store.rows import ExecutionRecord, NewExecution

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harvest_engine.events import HistoryEvent
    from harvest_engine.runtime.registry import Registry
    from harvest_engine.store.txn_protocol import WriteTxn


@dataclass(frozen=True)
class ScheduledRetry:
    """The retry a failure started."""

    exec_id: str
    attempt: int
    not_before: datetime
    backoff: timedelta

    def event_attrs(self) -> dict[str, object]:
        """The WorkflowRetryScheduled attributes."""
        return {
            "successor": self.exec_id,
            "attempt": self.attempt,
            "backoff": self.backoff.total_seconds(),
        }


def schedule_retry(
    txn: WriteTxn,
    row: ExecutionRecord,
    error: ErrorInfo,
    now: datetime,
    registry: Registry,
    unrecorded: Sequence[HistoryEvent] = (),
    *,
    advice_at: int | None = None,
    advice_bytes: int | None = None,
) -> ScheduledRetry | None:
    """Start the retry of a run failing with `error`, or None when the policy says no.

    `unrecorded` holds the failing decision's own events, not yet appended;
    `advice_at` and `advice_bytes` are the continue-as-new advice the retry
    records (see `start_run`).
    """
    if row.retry_policy is None:
        return None
    policy = RetryPolicy.from_json(payloads.loads(row.retry_policy))
    if not policy.retries(row.attempt, error.type, error.non_retryable):
        return None
    backoff = policy.backoff(row.attempt)
    successor = str(ExecutionId.new())
    info = registry.workflows.get(row.workflow_name)
    timeout = None if info is None else info.execution_timeout
    new = NewExecution(
        exec_id=successor,
        workflow_name=row.workflow_name,
        workflow_id=successor,
        input=row.input or "null",
        attempt=row.attempt + 1,
        parent_exec_id=row.parent_exec_id,
        parent_close_policy=row.parent_close_policy,
        predecessor=row.exec_id,
        deadline=None if timeout is None else now + timeout,
        retry_policy=row.retry_policy,
        memo=row.memo,
        search_attributes=row.search_attributes,
        not_before=now + backoff,
    )
    start_run(txn, new, now, advice_at=advice_at, advice_bytes=advice_bytes)
    # A run of a queue retries through it, as a continue-as-new does.
    enqueue.enqueue_successor(registry, txn, row.exec_id, new, now, now + backoff)
    _copy_signals(txn, row.exec_id, successor, unrecorded)
    txn.update_execution(row.exec_id, successor=successor)
    return ScheduledRetry(successor, row.attempt + 1, now + backoff, backoff)


def _copy_signals(
    txn: WriteTxn, failed: str, retry: str, unrecorded: Sequence[HistoryEvent]
) -> None:
    """Every signal the failed run received, then its undelivered ones, in arrival order."""
    for event in [*txn.load_events(failed), *unrecorded]:
        if event.type == "SignalReceived":
            txn.stage_signal(
                retry,
                str(event.attrs.get("name", "")),
                payloads.dumps(event.attrs.get("payload")),
                None,
                event.at,
            )
    for signal in txn.staged_signals(failed, -1):
        # Its headers go with it (a trace links the retry's decision to its sender).
        headers = txn.headers(failed, SIGNAL, str(signal.signal_id))
        txn.stage_signal(
            retry,
            signal.name,
            payloads.dumps(signal.payload.value),
            signal.idempotency_key,
            signal.received_at,
            headers,
        )
