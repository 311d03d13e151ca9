"""Row and key locks of a Postgres write transaction, taken always in one order.

Several workers write one database at once, so the transaction takes the
locks SQLite's single writer never needed, always in one order (a run's
execution row before its task rows) so two workers do not deadlock on one run:
- a run's row is read FOR UPDATE: a decision, a completion and a signal of
  one run wait for each other, and each then reads the committed state;
- a decision holds its own run's row and never waits for another's (a
  signal's target, a child, an awaited run, a start key): two decisions
  whose runs signal each other would each hold one row and wait for the
  other's. It takes them NOWAIT, and one held elsewhere raises `RunBusy`:
  the decision stands back and runs again once the holder committed;
- starting by workflow id and the mutex queues take transaction-scoped
  advisory locks on their key, so two workers cannot both start one id or
  both be granted one mutex;
- a schedule row is read FOR UPDATE, so a slot fires once.

`PostgresWriteTxn` (write_txn.py) inherits these and keeps the state they
read: the run it decides and the row its lock read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine.store.postgres import batch_locks
from harvest_engine.store.postgres.txn_state import TxnState
from harvest_engine.store.sql import columns
from harvest_engine.store.txn_protocol import RunBusy
from harvest_engine.timestamps import opt_micros

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime


class RowLocks(TxnState):
    """WriteTxn methods that lock runs' rows and advisory keys (NOWAIT in a decision)."""

    def _key_lock(self, *parts: str) -> None:
        """Hold an advisory lock on a key until the transaction ends (RunBusy in a decision)."""
        key = "\x1f".join(parts)
        if self._deciding is None:
            self._conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,)
            )
            return
        row = self._conn.execute(
            "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))", (key,)
        ).fetchone()
        if row is None or not row[0]:
            raise RunBusy(self._deciding)

    def _waits_for(self, exec_id: str) -> bool:
        """Whether a lock on this run's row may wait (False: NOWAIT, in a decision of another run)."""
        return self._deciding is None or self._deciding == exec_id

    def _lock_row(self, sql: str, exec_id: str) -> tuple[Any, ...] | None:
        """Run a ``... FOR UPDATE`` read of `exec_id`'s row; NOWAIT unless it may wait."""
        if self._waits_for(exec_id):
            return self._conn.execute(sql, (exec_id,)).fetchone()
        try:
            return self._conn.execute(sql + " NOWAIT", (exec_id,)).fetchone()
        except psycopg.errors.LockNotAvailable as exc:
            raise RunBusy(exec_id) from exc

    # -- runs ---------------------------------------------------------------

    def lock_runs(
        self,
        exec_ids: Sequence[str],
        *,
        deciding_at: datetime | None = None,
        task_ids: Sequence[int] = (),
    ) -> set[str]:
        """Lock a batch's runs (and tasks) in one round trip (`batch_locks`)."""
        return batch_locks.lock_runs(
            self._conn,
            self.memory,
            exec_ids,
            deciding_at=opt_micros(deciding_at),
            task_ids=task_ids,
        )

    def lock_for_decision(self, exec_id: str) -> bool:
        """Lock the run's row for this decision; False when another worker holds it now.

        A run of the batch (`lock_runs`) is answered from memory. Else the
        row is read in the same statement and kept for the decision's
        `execution()` that follows (one round trip instead of two), with
        whether the run has any staged signal, timer or mutex entry
        (`txn_memory`).
        """
        if exec_id in self.memory.rows:
            self._deciding = exec_id
            return True  # held by the transaction (an unknown run reads None)
        if exec_id in self.memory.skipped:
            return False
        row = self._conn.execute(
            f"SELECT {columns.EXECUTION_COLUMNS}, {batch_locks.FLAGS} "
            "FROM harvest_executions e WHERE exec_id = %s FOR UPDATE SKIP LOCKED",
            (exec_id,),
        ).fetchone()
        if row is not None:
            self._deciding = exec_id
            self._locked_row, self.memory.quiet[exec_id] = batch_locks.split(row)
            return True
        gone = self._conn.execute(
            "SELECT 1 FROM harvest_executions WHERE exec_id = %s", (exec_id,)
        ).fetchone()
        return gone is None
