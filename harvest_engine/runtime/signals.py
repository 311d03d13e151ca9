"""Delivering signals from outside: validate at the boundary, stage for the next drive."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from harvest_engine import payloads
from harvest_engine.errors import ExecutionNotFound, InvalidSignal, WorkflowNotRunning
from harvest_engine.store.protocol import DurableStore

RESERVED_KEY_PREFIX = "harvest.promise:"


def check_signal(name: Any, key: str | None) -> str | None:
    """Refuse a blank name or a reserved key; an empty key is no key."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidSignal(reason=f"a signal name is non-empty text, got {name!r}")
    if key is None or key == "":
        return None
    if not isinstance(key, str):
        raise InvalidSignal(reason=f"an idempotency key is text, got {key!r}")
    if key.startswith(RESERVED_KEY_PREFIX):
        raise InvalidSignal(reason=f"keys starting with {RESERVED_KEY_PREFIX!r} are reserved")
    return key


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
    The key probe comes before the state check (guide §8).
    """
    key = check_signal(name, key)
    encoded = payloads.check(payloads.to_json(payload), "signal payload")
    with store.write() as txn:
        row = txn.execution(exec_id)
        if row is None:
            raise ExecutionNotFound(exec_id=exec_id)
        if key is not None and txn.signal_key_exists([exec_id], key):
            return False
        if row.state != "RUNNING":
            raise WorkflowNotRunning(exec_id=exec_id, state=row.state)
        if row.deadline is not None and now >= row.deadline:
            raise WorkflowNotRunning(exec_id=exec_id, state="TIMED_OUT")
        return txn.stage_signal(exec_id, name, encoded, key, now)
