"""TxnState: what one Postgres write transaction holds, set once for the parts that use it.

The connection (read through `_conn`, which drops the row copy a lock read),
the worker and its lease length, the transaction's memory (txn_memory.py),
the tasks it claimed, the run it decides. `PostgresWriteTxn`'s parts (row
locks, signals and timers, tasks) each subclass it, so each reads state its
base set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.store.postgres import deferred
from harvest_engine.store.postgres.notify import NOTIFY_CANCEL, cancel_notices

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import timedelta

    import psycopg

    from harvest_engine.store.postgres.txn_memory import TxnMemory
    from harvest_engine.store.rows import AttemptKey, ExecutionRecord


class TxnState:
    """The state of one Postgres write transaction (or one of its savepoints)."""

    def __init__(
        self,
        conn: psycopg.Connection[tuple[Any, ...]],
        worker_id: str,
        lease: timedelta,
        memory: TxnMemory,
        claimed: list[int] | None = None,
    ) -> None:
        self._raw = conn
        # What the transaction (and its savepoints) wrote or learnt: see txn_memory.
        self.memory = memory
        self.worker_id = worker_id
        self.lease = lease
        self.undo: list[Callable[[], None]] = []
        # Task ids this transaction (and any it joins) took under this worker:
        # if its COMMIT fails, the store releases them, since the commit may
        # have landed unseen and a claim nobody runs must not be renewed forever.
        self.claimed: list[int] = [] if claimed is None else claimed
        # The run this transaction decides (lock_for_decision): other runs'
        # rows and keys are then taken without waiting (see write_txn_locks).
        self._deciding: str | None = None
        # The row `lock_for_decision` read while locking it, for the
        # `execution()` call that follows it at once; any other statement
        # (through `_conn`) may change the row, so it drops the copy.
        self._locked_row: ExecutionRecord | None = None

    @property
    def _conn(self) -> psycopg.Connection[tuple[Any, ...]]:
        """The connection for a statement: the held writes go first (`deferred`)."""
        self._locked_row = None
        if self.memory.held.waiting:
            deferred.send(self._raw, self.memory)
        return self._raw

    def on_rollback(self, fn: Callable[[], None]) -> None:
        """Call `fn` if this transaction rolls back, so in-memory state follows the database."""
        self.undo.append(fn)

    def announce_cancels(self, attempts: Sequence[AttemptKey], reason: str) -> None:
        """Notify CANCEL_CHANNEL (delivered at the commit, dropped on rollback).

        This process hears them at the commit too, not only once its LISTEN
        thread does: a waiting attempt it claims next then starts cancelled.
        """
        for payload in cancel_notices(list(attempts), reason):
            self._conn.execute(NOTIFY_CANCEL, (payload,))
        self.memory.announced.append((list(attempts), reason))
