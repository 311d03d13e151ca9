"""Pause and unpause: a paused run takes no decision and starts no new attempt.

The pause is the run row's `pause_reason` (NULL: not paused). The listing
of runs needing a decision, the due times and the ready tasks leave a
paused run out, and a decision that meets one (a completion's follow-up)
stops at once. Signals, updates' staged inputs and timers wait in their
rows; the unpause flags the run for a decision, which takes them all in.
Attempts already running finish and record their outcome.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors import ExecutionNotFound, WorkflowNotRunning
from harvest_engine.runtime.repairing.restarts import reason_text

if TYPE_CHECKING:
    from harvest_engine.runtime.engine import Engine
    from harvest_engine.states import ExecutionId
    from harvest_engine.store.txn_protocol import WriteTxn

DEFAULT_PAUSE_REASON = "paused by request"


def pause(engine: Engine, exec_id: str | ExecutionId, reason: str) -> None:
    """Pause a RUNNING run; a paused one keeps its first reason."""
    text = engine.require(exec_id)
    why = reason_text(reason, DEFAULT_PAUSE_REASON)
    with engine.store.write() as txn:
        pause_in(txn, text, why)


def pause_in(txn: WriteTxn, exec_id: str, reason: str) -> bool:
    """Pause inside `txn`: True when paused now, False when it already was.

    Raises:
        ExecutionNotFound, WorkflowNotRunning: the run is unknown or closed.
    """
    row = txn.execution(exec_id)
    if row is None:
        raise ExecutionNotFound(exec_id=exec_id)
    if row.state != "RUNNING":
        raise WorkflowNotRunning(exec_id=exec_id, state=row.state)
    if row.pause_reason is not None:
        return False
    txn.update_execution(exec_id, pause_reason=reason)
    return True


def unpause(engine: Engine, exec_id: str | ExecutionId) -> None:
    """Let a paused run go on: its next decision takes in what arrived meanwhile."""
    text = engine.require(exec_id)
    with engine.store.write() as txn:
        unpause_in(txn, text)
    engine.waker.wake()


def unpause_in(txn: WriteTxn, exec_id: str) -> bool:
    """Unpause inside `txn`; whether it was paused.

    Raises:
        ExecutionNotFound, WorkflowNotRunning: the run is unknown or closed.
    """
    row = txn.execution(exec_id)
    if row is None:
        raise ExecutionNotFound(exec_id=exec_id)
    if row.state != "RUNNING":
        raise WorkflowNotRunning(exec_id=exec_id, state=row.state)
    if row.pause_reason is None:
        return False
    txn.update_execution(exec_id, pause_reason=None, needs_decision=1)
    return True
