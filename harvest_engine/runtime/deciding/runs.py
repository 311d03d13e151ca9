"""Inserting a run with its WorkflowStarted event, and what `ctx.info()` reads from a row."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import DatabaseCorrupt
from harvest_engine.events import HistoryEvent
from harvest_engine.runtime.deciding import headers
from harvest_engine.states import TERMINAL_STATES, ErrorInfo, ExecutionOutcome
from harvest_engine.workflow.run_info import RunInfo

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.store.rows import ExecutionRecord, NewExecution
    from harvest_engine.store.txn_protocol import WriteTxn


def start_run(
    txn: WriteTxn,
    new: NewExecution,
    now: datetime,
    *,
    advice_at: int | None = None,
    advice_bytes: int | None = None,
) -> None:
    """Insert a run with its WorkflowStarted event.

    Args:
        txn: the write transaction.
        new: the run's row.
        now: its start time.
        advice_at: the history length at which `should_continue_as_new()`
            turns true when the caps ask for less than the default; recorded
            with the start so every replay of the run gives the same answer.
        advice_bytes: the stored history bytes at which it turns true for a
            lowered byte cap (`Settings.advice_bytes`), recorded alike.
    """
    attrs: dict[str, Any] = {
        "exec_id": new.exec_id,
        "workflow_name": new.workflow_name,
        "workflow_id": new.workflow_id,
        "input": payloads.loads(new.input),
        "attempt": new.attempt,
    }
    if new.parent_exec_id:
        attrs["parent_exec_id"] = new.parent_exec_id
    if new.predecessor:
        attrs["predecessor"] = new.predecessor
    # What `ctx.memo()` and `ctx.search_attributes()` start from on every replay.
    if advice_at is not None:
        attrs["continue_as_new_at"] = advice_at
    if advice_bytes is not None:
        attrs["continue_as_new_bytes"] = advice_bytes
    if new.memo is not None:
        attrs["memo"] = payloads.loads(new.memo)
    if new.search_attributes is not None:
        attrs["search_attributes"] = payloads.loads(new.search_attributes)
    txn.insert_execution(
        new, HistoryEvent(seq=1, type="WorkflowStarted", at=now, attrs=attrs)
    )
    # An interceptor's context (a start's, or the deciding parent's) goes along.
    headers.store_start(txn, new.exec_id)


def run_info(row: ExecutionRecord) -> RunInfo:
    """What `ctx.info()` reports, from the run's row."""
    return RunInfo(
        workflow_name=row.workflow_name,
        workflow_id=row.workflow_id,
        exec_id=row.exec_id,
        attempt=row.attempt,
        parent_execution_id=row.parent_exec_id,
        started_at=row.started_at,
        deadline=row.deadline,
        predecessor=row.predecessor,
    )


def append(
    txn: WriteTxn, exec_id: str, type_: str, attrs: dict[str, Any], now: datetime
) -> None:
    """Append one event at the run's next seq (outside a decision's own event list)."""
    row = txn.execution(exec_id)
    if row is None:
        return
    txn.append_events(
        exec_id, [HistoryEvent(seq=row.next_seq, type=type_, at=now, attrs=attrs)]
    )


def outcome_of(row: ExecutionRecord, path: str) -> ExecutionOutcome:
    """The stored outcome of a run's row; DatabaseCorrupt when the row does not read.

    Args:
        row: the run's row.
        path: the database file, for the error message.
    """
    try:
        if row.state == "RUNNING":
            return ExecutionOutcome.Running()
        if row.state == "COMPLETED":
            return ExecutionOutcome.Completed(
                output=payloads.loads(row.output) if row.output else None
            )
        if row.state == "FAILED":
            return ExecutionOutcome.Failed(
                error=ErrorInfo.from_json(
                    payloads.loads(row.error) if row.error else None
                )
            )
        if row.state in TERMINAL_STATES:
            return ExecutionOutcome.Terminated(state=row.state)
        reason = f"unknown state {row.state!r}"
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        reason = f"its outcome does not read ({type(exc).__name__}: {exc})"
    raise DatabaseCorrupt(path=path, reason=f"run {row.exec_id}: {reason}")
