"""Delivering signals from outside: checked (`harvest_engine.calls`), staged for the next drive.

Keys: a partial unique index on
(exec_id, idempotency_key) enforces them; the key probe runs before the state
check, so a retry after the run ended returns False instead of an error; a
seal keeps keyed rows, so their keys still dedupe. A key sent by exec id is
scoped to the run that holds the row; a key sent by workflow id is probed
across every run of the (workflow_name, workflow_id) key, in any state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.calls import (
    SignalDelivery,
    check_signal,
    check_workflow_id,
    encoded_payload,
)
from harvest_engine.errors import (
    ExecutionNotFound,
    WorkflowIdNotFound,
    WorkflowNotRunning,
)
from harvest_engine.names import check_name
from harvest_engine.runtime.deciding import headers
from harvest_engine.states import ExecutionId

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.store.rows import ExecutionRecord
    from harvest_engine.store.txn_protocol import WriteTxn


def require_running(row: ExecutionRecord, now: datetime) -> None:
    """WorkflowNotRunning for a closed run, or one past its execution deadline.

    A run waiting in its queue (ENQUEUED) takes signals: they wait for it.
    """
    if row.state not in ("RUNNING", "ENQUEUED"):
        raise WorkflowNotRunning(exec_id=row.exec_id, state=row.state)
    if row.deadline is not None and now >= row.deadline:
        raise WorkflowNotRunning(exec_id=row.exec_id, state="TIMED_OUT")


def chain_key_holder(
    txn: WriteTxn, runs: Sequence[ExecutionRecord], key: str
) -> str | None:
    """The run of a workflow id's chain that already holds `key`, or None."""
    return txn.signal_key_exists([run.exec_id for run in runs], key)


def send_signal(
    store: DurableStore,
    exec_id: str,
    name: str,
    payload: Any,
    key: str | None,
    now: datetime,
) -> bool:
    """Stage a signal; False when the run already holds `key`.

    An unknown run is ExecutionNotFound and a closed (or past-deadline) one is
    WorkflowNotRunning, so a wakeup no drive could consume is refused, not lost.
    The key probe comes before the state check, and the payload
    cap after it, so a duplicate delivery is answered without judging it.
    """
    key = check_signal(name, key)
    with store.write() as txn:
        row = txn.peek_execution(exec_id)
        if row is None:
            raise ExecutionNotFound(exec_id=exec_id)
        if key is not None and txn.signal_key_exists([exec_id], key):
            return False
        require_running(row, now)
        encoded = encoded_payload(payload)
        staged = txn.stage_signal(
            exec_id, name, encoded, key, now, headers.signal_text()
        )
        return staged


def send_signal_by_workflow_id(
    store: DurableStore,
    workflow_name: str,
    workflow_id: str,
    name: str,
    payload: Any,
    key: str | None,
    now: datetime,
) -> SignalDelivery:
    """Stage a signal on the RUNNING run of (workflow_name, workflow_id).

    The checks run in this order: the blank id (BlankWorkflowId), the
    key rules (InvalidSignal), the chain key probe (a key any run of the id
    holds: ``delivered=False`` naming that run), the run lookup (no run at
    all: WorkflowIdNotFound), then the run state (no RUNNING run:
    WorkflowNotRunning naming the newest) and the payload cap.
    """
    check_name(workflow_name, "workflow name")
    workflow_id = check_workflow_id(workflow_id)
    key = check_signal(name, key)
    with store.write() as txn:
        runs = txn.runs_of_key(workflow_name, workflow_id)
        if key is not None:
            holder = chain_key_holder(txn, runs, key)
            if holder is not None:
                return SignalDelivery(exec_id=ExecutionId(holder), delivered=False)
        if not runs:
            raise WorkflowIdNotFound(
                workflow_name=workflow_name, workflow_id=workflow_id
            )
        target = next((run for run in runs if run.state == "RUNNING"), runs[0])
        require_running(target, now)
        encoded = encoded_payload(payload)
        staged = txn.stage_signal(
            target.exec_id, name, encoded, key, now, headers.signal_text()
        )
        return SignalDelivery(exec_id=ExecutionId(target.exec_id), delivered=staged)
