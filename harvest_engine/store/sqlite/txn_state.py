"""TxnState: what one SQLite write transaction holds, set once for the parts that use it.

The connection, the undo list of its savepoint, the run cache shared with
the transaction's savepoints (run_cache.py) and the deferred decision marks
(decision_marks.py). `SqliteWriteTxn`'s parts (tasks, signals and timers,
decision marks) each subclass it, so each reads state its base set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.store.sqlite.run_cache import RunCache

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Sequence

    from harvest_engine.store.rows import AttemptKey


class TxnState:
    """The state of one `BEGIN IMMEDIATE` transaction (or one of its savepoints)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        runs: RunCache | None = None,
        marks: set[str] | None = None,
    ) -> None:
        self._conn = conn
        self.undo: list[Callable[[], None]] = []
        # Shared by the transaction and its savepoints; kept by the store (run_cache).
        self._runs = RunCache() if runs is None else runs
        # The runs whose needs_decision = 1 waits for the commit (decision_marks);
        # None: the flag is written at once (no commit here writes them).
        self._marks = marks
        # Attempt cancels to hand the store's cancel listeners after the commit.
        self.announced: list[tuple[list[AttemptKey], str]] = []

    def announce_cancels(self, attempts: Sequence[AttemptKey], reason: str) -> None:
        """Cancel these claimed attempts once this transaction commits (in process)."""
        if attempts:
            self.announced.append((list(attempts), reason))

    def on_rollback(self, fn: Callable[[], None]) -> None:
        """Call `fn` if this transaction rolls back, so in-memory state follows the file."""
        self.undo.append(fn)
