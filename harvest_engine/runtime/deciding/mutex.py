"""Workflow mutexes: queue places, grants with a fencing lock_seq, and where a waiter stands.

`acquire()` records MutexRequested, which queues the run for the key in the
decision transaction. A run heading the queue of a free key gets the key,
with a new lock_seq that only grows per key, and its history gets
MutexGranted. A waiter keeps no decision flag while it waits (it costs
nothing): a release, or a seal (which drops every lock and queue place of
the run), flags the run then heading the queue of a free key
(`SideTables._wake_mutex_head`), and its next cycle is granted the key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvest_engine.store.txn_protocol import WriteTxn
    from harvest_engine.workflow.instance import WorkflowInstance


def grant_next(
    txn: WriteTxn, exec_id: str, instance: WorkflowInstance
) -> tuple[str, int] | None:
    """Grant the first key the run waits for, if it is free and the run heads its queue."""
    for key in instance.waiting_mutex_keys():
        lock_seq = txn.grant_mutex(key, exec_id)
        if lock_seq is not None:
            return key, lock_seq
    return None


def waiting_key(instance: WorkflowInstance) -> str | None:
    """The key a parked run waits for, if any."""
    keys = instance.waiting_mutex_keys()
    return keys[0] if keys else None
