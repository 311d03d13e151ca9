"""A write joined to the open `write_together` transaction: its own block, a savepoint only if it sends.

Every decision and every recorded outcome of a pass is such a write (some
eight a queued run). It is a plain context manager, not a generator one:
entering and leaving it is a handful of Python calls, where the generator
form and the block's own took some thirty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.store.postgres.write_txn import PostgresWriteTxn

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any

    import psycopg

    from harvest_engine.store.postgres.txn_memory import Mark


class Depth:
    """How many joined writes are open (their savepoints are named by it)."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open = 0


class JoinedWrite:
    """`with store.write()` inside `write_together`: on an error, only its own writes are undone.

    Its held writes are dropped and what it sent is rolled back to its
    savepoint (`TxnMemory.close_block`); then its `undo` callbacks run.
    """

    __slots__ = ("_conn", "_depth", "_mark", "_txn")
    _mark: Mark

    def __init__(
        self,
        conn: psycopg.Connection[tuple[Any, ...]],
        outer: PostgresWriteTxn,
        depth: Depth,
    ) -> None:
        self._conn, self._depth = conn, depth
        self._txn = PostgresWriteTxn(
            conn, outer.worker_id, outer.lease, outer.memory, outer.claimed
        )

    def __enter__(self) -> PostgresWriteTxn:
        self._depth.open += 1
        self._mark = self._txn.memory.open_block(f"harvest_{self._depth.open}")
        return self._txn

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc is None:
                self._txn.memory.close_block(self._conn, self._mark, failed=False)
                return
            try:
                self._txn.memory.close_block(self._conn, self._mark, failed=True)
            finally:
                for undo in reversed(self._txn.undo):
                    undo()
        finally:
            self._depth.open -= 1
