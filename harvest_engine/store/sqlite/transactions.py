"""WriteTransactions: how a SqliteStore opens, joins and ends write transactions.

BEGIN IMMEDIATE, joined writes and savepoints, the run cache and decision
marks kept across commits, released claims and rollback listeners: the state
of one writer connection's transactions, owned here. `SqliteStore`
(store.py) holds one and hands its calls on; the statements of a
transaction are `SqliteWriteTxn`'s (write_txn.py).
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import TYPE_CHECKING

from harvest_engine.errors import HarvestInternalError
from harvest_engine.store.sql.commit_listeners import CommitListeners
from harvest_engine.store.sqlite.faults import TRANSLATED, translate
from harvest_engine.store.sqlite.run_cache import RunCache
from harvest_engine.store.sqlite.write_scopes import JoinedBare, Savepoint, Transaction
from harvest_engine.store.sqlite.write_txn_signals import (
    signal_headers_written,
    watchers_written,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from harvest_engine.store.rows import AttemptKey
    from harvest_engine.store.sqlite.write_txn import SqliteWriteTxn


class WriteTransactions:
    """The write transactions of one writer connection (a SqliteStore's)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: str,
        storage_errors: tuple[type[Exception], ...],
    ) -> None:
        self.conn = conn
        """The writer connection (replaced by a closed one when the store closes)."""
        self.path = path
        self.storage_errors = storage_errors
        self.lock = threading.Lock()
        """Held by a transaction; sync activity bodies heartbeat from worker threads."""
        self.released_claims: set[int] = set()
        """Claims given back; the next transaction puts them back to PENDING."""
        self._in_txn = False
        self._txn_thread = 0
        self._rollback_listeners: list[Callable[[BaseException], None]] = []
        self._cancel_listeners: list[Callable[[list[AttemptKey], str], None]] = []
        self.commit_listeners = CommitListeners()
        """Called after each commit (in-process readers, the wake channel's clients)."""
        self._txns: list[SqliteWriteTxn] = []  # the transaction, then its savepoints
        # The rows the open transaction read, shared with its savepoints and kept
        # for the next transaction while they are current (run_cache.RunCache).
        self._runs = RunCache()
        # Read here, not at the first delivery: a signal's statements stay its own.
        self._runs.signal_headers = signal_headers_written(conn)
        self._runs.watchers = watchers_written(conn)
        self._marks: set[str] = set()  # needs_decision = 1 kept to the commit
        self._joinable = False
        self._bare = False  # joined writes take no savepoint (write_together)
        self._depth = 0

    def write(self) -> AbstractContextManager[SqliteWriteTxn]:
        """One write transaction: BEGIN IMMEDIATE, the body, COMMIT; ROLLBACK on any error.

        The one place a write fails: a driver or OS error from the body or
        the COMMIT arrives as a typed error (`faults.translate`), the
        transaction's `on_rollback` callbacks run, and after a storage failure
        the rollback listeners drop what the runtime keeps in memory.
        """
        # Sync activity bodies heartbeat from worker threads on this same
        # connection: the lock keeps their writes out of the loop thread's
        # transaction. A nested write on one thread is a bug, not a wait,
        # except inside `write_together()`, where each write is a savepoint.
        if self._in_txn and self._txn_thread == threading.get_ident():
            if not self._joinable:
                raise HarvestInternalError("nested write transaction")
            # A small object, not a generator's context manager: every
            # decision of a batch takes one (write_scopes.py).
            return JoinedBare(self) if self._bare else Savepoint(self)
        return Transaction(self)

    def failed(self, txn: SqliteWriteTxn, exc: BaseException) -> BaseException:
        """Roll the transaction back after `exc`; the error to raise (translated)."""
        self._runs.clear()
        self._rolled_back(txn, exc)
        self._marks.clear()
        return translate(exc, self.path)

    def committed(self, txn: SqliteWriteTxn) -> None:
        """The transaction committed: keep its rows, tell the listeners."""
        self._runs.committed(self.conn)
        self.released_claims.clear()
        if txn.announced:
            self._announce(txn.announced)
        for listener in self.commit_listeners.fns:
            listener()

    def ended(self) -> None:
        """The transaction ended, committed or not: no transaction is open."""
        self._in_txn = False
        self._txn_thread = 0
        self._txns.clear()

    def _rolled_back(self, txn: SqliteWriteTxn, exc: BaseException) -> None:
        # SQLite may already have rolled back (a full disk, an I/O error):
        # ROLLBACK then fails with "no transaction is active", which must not
        # hide the error that caused it.
        if self.conn.in_transaction:
            with suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
        for undo in reversed(txn.undo):
            undo()
        if isinstance(exc, (self.storage_errors, TRANSLATED)):
            for listener in self._rollback_listeners:
                listener(exc)

    def add_rollback_listener(self, fn: Callable[[BaseException], None]) -> None:
        """Call `fn` with the error after a storage failure rolls a transaction back."""
        self._rollback_listeners.append(fn)

    def add_cancel_listener(self, fn: Callable[[list[AttemptKey], str], None]) -> None:
        """Call `fn(attempts, reason)` for the cancels each committed transaction announced."""
        self._cancel_listeners.append(fn)

    def _announce(self, announced: list[tuple[list[AttemptKey], str]]) -> None:
        for attempts, reason in announced:
            for listener in self._cancel_listeners:
                listener(attempts, reason)

    def apply_released_claims(self) -> None:
        """Put the claims given back since the last commit to PENDING (a transaction's first write)."""
        if self.released_claims:
            marks = ",".join("?" * len(self.released_claims))
            self.conn.execute(
                "UPDATE harvest_tasks SET status = 'PENDING', claimed_at = NULL "
                f"WHERE status = 'RUNNING' AND id IN ({marks})",
                tuple(self.released_claims),
            )

    @contextmanager
    def write_together(self, *, savepoints: bool = True) -> Iterator[SqliteWriteTxn]:
        """One transaction that every `write()` on this thread joins until it ends.

        A joined write is a savepoint: its error rolls back its own changes
        and leaves the outer transaction going, so a client command's effect
        (a start, a signal, an update) and its reply row commit together, or
        the reply alone records the error.

        Without `savepoints` (a batch of one run: its completion and its
        decision), joined writes take none, which saves the SAVEPOINT and
        RELEASE statements of every commit; a joined write that fails then
        rolls the whole transaction back and raises `JoinedWriteFailed`, and
        the caller runs it again with savepoints (joined_writes.py).
        """
        with self.write() as txn:
            joined = self._joinable  # already inside one: stay joinable after
            bare = self._bare
            self._joinable = True
            if not joined:
                self._bare = not savepoints
            try:
                yield txn
            finally:
                self._joinable = joined
                self._bare = bare
