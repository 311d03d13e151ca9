"""The write transactions of a SqliteStore: BEGIN IMMEDIATE, joined writes and savepoints.

`SqliteStore` (store.py) inherits these and owns the state they keep (the
connection, the writer's thread lock, the run cache); the statements of a
transaction are `SqliteWriteTxn`'s (write_txn.py).
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

from harvest_engine.errors import HarvestInternalError
from harvest_engine.store.sqlite.decision_marks import write_marks
from harvest_engine.store.sqlite.faults import (
    TRANSLATED,
    guard_public_methods,
    translate,
)
from harvest_engine.store.sqlite.write_txn import SqliteWriteTxn
from harvest_engine.store.txn_protocol import JoinedWriteFailed

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from harvest_engine.store.sqlite.run_cache import RunCache


@guard_public_methods(skip=("write",))
class WriteTransactions:
    """DurableStore methods that open, join and end write transactions."""

    storage_errors: tuple[type[Exception], ...]
    path: str
    _conn: sqlite3.Connection
    _in_txn: bool
    _txn_thread: int
    _write_lock: threading.Lock
    _rollback_listeners: list[Callable[[BaseException], None]]
    _released_claims: set[int]
    _txns: list[SqliteWriteTxn]
    _runs: RunCache
    _marks: set[str]
    _joinable: bool
    _bare: bool
    _depth: int

    @contextmanager
    def write(self) -> Iterator[SqliteWriteTxn]:
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
            # A plain generator, not a second context manager: every
            # decision of a batch takes one.
            if self._bare:
                yield from self._joined_bare()
            else:
                yield from self._savepoint()
            return
        with self._write_lock:
            runs = self._runs
            txn = SqliteWriteTxn(self._conn, runs, self._marks)
            self._txns.append(txn)
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                self._in_txn = True
                self._txn_thread = threading.get_ident()
                runs.begin(self._conn)  # the last commit's rows, if still current
                self._apply_released_claims()
                yield txn
                write_marks(self._conn, self._marks)
                runs.before_commit(self._conn)
                self._conn.execute("COMMIT")
            except BaseException as exc:
                runs.clear()
                self._rolled_back(txn, exc)
                self._marks.clear()
                typed = translate(exc, self.path)
                if typed is exc:
                    raise
                raise typed from exc
            else:
                runs.committed(self._conn)
                self._released_claims.clear()
            finally:
                self._in_txn = False
                self._txn_thread = 0
                self._txns.clear()

    def _rolled_back(self, txn: SqliteWriteTxn, exc: BaseException) -> None:
        # SQLite may already have rolled back (a full disk, an I/O error):
        # ROLLBACK then fails with "no transaction is active", which must not
        # hide the error that caused it.
        if self._conn.in_transaction:
            with suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
        for undo in reversed(txn.undo):
            undo()
        if isinstance(exc, (self.storage_errors, TRANSLATED)):
            for listener in self._rollback_listeners:
                listener(exc)

    def add_rollback_listener(self, fn: Callable[[BaseException], None]) -> None:
        self._rollback_listeners.append(fn)

    def release_claim(self, task_id: int) -> None:
        self._released_claims.add(task_id)

    def _apply_released_claims(self) -> None:
        if self._released_claims:
            marks = ",".join("?" * len(self._released_claims))
            self._conn.execute(
                "UPDATE harvest_tasks SET status = 'PENDING', claimed_at = NULL "
                f"WHERE status = 'RUNNING' AND id IN ({marks})",
                tuple(self._released_claims),
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
        the caller runs it again with savepoints (`_joined_bare`).
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

    def _joined_bare(self) -> Iterator[SqliteWriteTxn]:
        """A joined write with no savepoint: its failure fails the whole transaction.

        What the write did cannot be undone alone, so any error becomes
        `JoinedWriteFailed`, which no handler between here and the batch
        catches: the transaction rolls back and the batch is run again with
        savepoints, where the error is handled as it always was.
        """
        if not self._conn.in_transaction:
            raise sqlite3.OperationalError("the joined transaction was rolled back")
        txn = SqliteWriteTxn(self._conn, self._runs, self._marks)
        self._txns.append(txn)
        try:
            yield txn
        except Exception as exc:
            raise JoinedWriteFailed from exc
        finally:
            self._txns.pop()
        self._txns[-1].undo.extend(txn.undo)

    def _savepoint(self) -> Iterator[SqliteWriteTxn]:
        if not self._conn.in_transaction:
            # SQLite rolled the whole transaction back (a full disk, an I/O
            # error): a write now would run outside it, in autocommit.
            raise sqlite3.OperationalError("the joined transaction was rolled back")
        self._depth += 1
        name = f"harvest_joined_{self._depth}"
        self._conn.execute(f"SAVEPOINT {name}")
        txn = SqliteWriteTxn(self._conn, self._runs, self._marks)
        self._txns.append(txn)
        try:
            yield txn
        except BaseException:
            self._txns.pop()
            # The rows read since may hold what the rollback undid.
            self._runs.clear()
            if self._conn.in_transaction:
                self._conn.execute(f"ROLLBACK TO {name}")
                self._conn.execute(f"RELEASE {name}")
            for undo in reversed(txn.undo):
                undo()
            raise
        else:
            self._txns.pop()
            self._conn.execute(f"RELEASE {name}")
            # Released into the enclosing transaction: if that rolls back, so
            # must the memory this savepoint's work changed.
            self._txns[-1].undo.extend(txn.undo)
        finally:
            self._depth -= 1
