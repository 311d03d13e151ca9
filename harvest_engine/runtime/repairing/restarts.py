"""Reset and fork: a new run whose history is an old run's up to a decision boundary.

Each is one write transaction: the new run's row and copied events, the
links between the runs, and for a reset the old run's end (TERMINATED, if it
was still running) and the signals it received after the point, staged
again for the new run. A crash leaves the old run untouched or the move
whole. The new run's first decision replays the copied events with today's
code and goes on from there (points.py says where a run may restart).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import ExecutionNotFound
from harvest_engine.events import HistoryEvent
from harvest_engine.runtime.deciding.children import hard_seal
from harvest_engine.runtime.repairing import points
from harvest_engine.states import ExecutionId
from harvest_engine.store.rows import NewExecution

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from harvest_engine.runtime.engine import Engine
    from harvest_engine.store.rows import ExecutionRecord
    from harvest_engine.store.txn_protocol import WriteTxn

DEFAULT_RESET_REASON = "reset by request"


def reason_text(reason: object, default: str) -> str:
    """A reason as stored: text (TypeError otherwise), a blank one replaced by `default`."""
    if reason is not None and not isinstance(reason, str):
        raise TypeError(f"a reason is text, got {type(reason).__name__}")
    text: str = payloads.check_value(reason or "", "reason")
    return text if text.strip() else default


def reset(
    engine: Engine, exec_id: str | ExecutionId, to_event: int | None, reason: str
) -> ExecutionId:
    """Reset the run (see `Runtime.reset`); the new run's id."""
    text = engine.require(exec_id)
    why = reason_text(reason, DEFAULT_RESET_REASON)
    failed = [
        a.activity_id
        for a in engine.store.activity_attempts(text, None)
        if a.outcome != "COMPLETED"
    ]
    now = engine.clock.now()
    new_id = ExecutionId.new()
    with engine.store.write() as txn:
        row, events = _read(txn, text)
        point = points.reset_point(text, events, to_event, failed)
        again = _signals_after(txn, row, events, point)
        # The old run, or the id's current run if that is another: one RUNNING run per id.
        for other in txn.runs_of_key(row.workflow_name, row.workflow_id):
            if other.state == "RUNNING":
                txn.update_execution(other.exec_id, cancel_reason=None, cancel_seq=None)
                hard_seal(txn, other.exec_id, "TERMINATED", why, now, engine.ends)
        marks = {"reset_from": text, "reset_reason": why}
        _copy(txn, row, events[:point], str(new_id), row.workflow_id, now, marks)
        for name, payload, key in again:
            txn.stage_signal(str(new_id), name, payload, key, now)
        txn.update_execution(text, reset_to=str(new_id))
        txn.update_execution(str(new_id), reset_from=text)
    return engine.woken(new_id)


def fork(
    engine: Engine,
    exec_id: str | ExecutionId,
    from_step: int,
    workflow_id: str | None,
) -> ExecutionId:
    """Fork the run (see `Runtime.fork`); the new run's id."""
    text = engine.require(exec_id)
    if workflow_id is not None and (
        not isinstance(workflow_id, str) or not workflow_id.strip()
    ):
        raise TypeError(f"a workflow id is non-blank text, got {workflow_id!r}")
    now = engine.clock.now()
    new_id = ExecutionId.new()
    with engine.store.write() as txn:
        row, events = _read(txn, text)
        points.check_decided(text, events)
        point = points.fork_point(text, events, from_step)
        wid = str(new_id) if workflow_id is None else workflow_id
        _copy(txn, row, events[:point], str(new_id), wid, now, {"forked_from": text})
        txn.update_execution(str(new_id), forked_from=text)
    return engine.woken(new_id)


def made_by_reset(engine: Engine, exec_id: str, reason: str) -> bool:
    """Whether a reset with `reason` made this run (its WorkflowStarted says so)."""
    events = engine.store.load_events(exec_id)
    return bool(events) and events[0].attrs.get("reset_reason") == reason


def _read(txn: WriteTxn, exec_id: str) -> tuple[ExecutionRecord, list[HistoryEvent]]:
    row = txn.execution(exec_id)
    if row is None:
        raise ExecutionNotFound(exec_id=exec_id)
    return row, txn.load_events(exec_id)


def _copy(
    txn: WriteTxn,
    row: ExecutionRecord,
    kept: Sequence[HistoryEvent],
    new_id: str,
    workflow_id: str,
    now: datetime,
    marks: dict[str, str],
) -> None:
    """Insert the new run with `kept` (events 1..point of the old one) as its history.

    Its WorkflowStarted is the old one's with the new ids and `marks` (where
    it came from and, for a reset, why), which replay ignores.
    """
    started = kept[0]
    attrs: dict[str, Any] = {
        **started.attrs,
        "exec_id": new_id,
        "workflow_id": workflow_id,
        **marks,
    }
    deadline = row.deadline if row.deadline is not None and row.deadline > now else None
    new = NewExecution(
        exec_id=new_id,
        workflow_name=row.workflow_name,
        workflow_id=workflow_id,
        input=payloads.dumps(started.attrs.get("input")),
        attempt=row.attempt,
        deadline=deadline,
        retry_policy=row.retry_policy,
        memo=row.memo,
        search_attributes=row.search_attributes,
    )
    txn.insert_execution(new, HistoryEvent(1, "WorkflowStarted", now, attrs))
    if len(kept) > 1:
        txn.append_events(new_id, list(kept[1:]), needs_decision=1)


def _signals_after(
    txn: WriteTxn, row: ExecutionRecord, events: Sequence[HistoryEvent], point: int
) -> list[tuple[str, str, str | None]]:
    """The signals the old run received after `point`, and those still staged for it."""
    found: list[tuple[str, str, str | None]] = [
        (str(e.attrs.get("name")), payloads.dumps(e.attrs.get("payload")), None)
        for e in events[point:]
        if e.type == "SignalReceived"
    ]
    if row.state == "RUNNING":
        found += [
            (s.name, payloads.dumps(s.payload.get()), s.idempotency_key)
            for s in txn.staged_signals(row.exec_id, -1)
        ]
    return found
