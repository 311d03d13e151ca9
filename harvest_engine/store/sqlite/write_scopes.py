"""The scopes `WriteTransactions.write` hands out: a transaction, or a write joined to one.

Every decision of a batch is a joined write (in a savepoint, or bare), and
every commit a transaction, so each is a small object with `__enter__` and
`__exit__` rather than a generator's context manager (whose wrapper,
generator frames and `next` calls cost about six Python calls more each).
"""

from __future__ import annotations

import sqlite3
import threading
from typing import TYPE_CHECKING, Protocol

from harvest_engine.store.sqlite.decision_marks import write_marks
from harvest_engine.store.sqlite.write_txn import SqliteWriteTxn
from harvest_engine.store.txn_protocol import JoinedWriteFailed

if TYPE_CHECKING:
    from types import TracebackType

    from harvest_engine.store.sqlite.run_cache import RunCache


class Writes(Protocol):
    """What a scope reads and changes of its `WriteTransactions` (transactions.py)."""

    conn: sqlite3.Connection
    lock: threading.Lock
    _runs: RunCache
    _marks: set[str]
    _txns: list[SqliteWriteTxn]
    _depth: int
    _in_txn: bool
    _txn_thread: int

    def failed(self, txn: SqliteWriteTxn, exc: BaseException) -> BaseException:
        """Roll back after `exc`; the error to raise."""

    def committed(self, txn: SqliteWriteTxn) -> None:
        """Keep the committed rows, tell the listeners."""

    def ended(self) -> None:
        """No transaction is open any more."""

    def apply_released_claims(self) -> None:
        """The claims given back, PENDING again."""


class Transaction:
    """One write transaction: BEGIN IMMEDIATE, the body, COMMIT; ROLLBACK on any error."""

    __slots__ = ("_txn", "_writes")

    def __init__(self, writes: Writes) -> None:
        self._writes = writes

    def __enter__(self) -> SqliteWriteTxn:
        writes = self._writes
        conn = writes.conn
        writes.lock.acquire()
        try:
            runs = writes._runs
            self._txn = txn = SqliteWriteTxn(conn, runs, writes._marks)
            writes._txns.append(txn)
            try:
                conn.execute("BEGIN IMMEDIATE")
                writes._in_txn = True
                writes._txn_thread = threading.get_ident()
                runs.begin(conn)  # the last commit's rows, if still current
                writes.apply_released_claims()
            except BaseException as exc:
                typed = writes.failed(txn, exc)
                if typed is exc:
                    raise
                raise typed from exc
        except BaseException:
            writes.ended()
            writes.lock.release()
            raise
        return txn

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        writes, txn = self._writes, self._txn
        try:
            if exc is None:
                conn = writes.conn
                try:
                    write_marks(conn, writes._marks)
                    writes._runs.before_commit(conn)
                    conn.execute("COMMIT")
                except BaseException as failure:
                    typed = writes.failed(txn, failure)
                    if typed is failure:
                        raise
                    raise typed from failure
                writes.committed(txn)
                return
            typed = writes.failed(txn, exc)
            if typed is not exc:
                raise typed from exc
        finally:
            writes.ended()
            writes.lock.release()


def _rolled_back_already() -> sqlite3.OperationalError:
    # SQLite rolled the whole transaction back (a full disk, an I/O error):
    # a write now would run outside it, in autocommit.
    return sqlite3.OperationalError("the joined transaction was rolled back")


class Savepoint:
    """A joined write in a savepoint: its error rolls back its own changes alone."""

    __slots__ = ("_name", "_txn", "_writes")

    def __init__(self, writes: Writes) -> None:
        self._writes = writes

    def __enter__(self) -> SqliteWriteTxn:
        writes = self._writes
        conn = writes.conn
        if not conn.in_transaction:
            raise _rolled_back_already()
        writes._depth += 1
        self._name = name = f"harvest_joined_{writes._depth}"
        try:
            conn.execute(f"SAVEPOINT {name}")
        except BaseException:
            writes._depth -= 1
            raise
        self._txn = txn = SqliteWriteTxn(conn, writes._runs, writes._marks)
        writes._txns.append(txn)
        return txn

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        writes, txn, name = self._writes, self._txn, self._name
        conn = writes.conn
        try:
            writes._txns.pop()
            if kind is None:
                conn.execute(f"RELEASE {name}")
                # Released into the enclosing transaction: if that rolls back,
                # so must the memory this savepoint's work changed.
                if txn.undo:
                    writes._txns[-1].undo.extend(txn.undo)
                if txn.announced:
                    writes._txns[-1].announced.extend(txn.announced)
                return
            # The rows read since may hold what the rollback undid.
            writes._runs.clear()
            if conn.in_transaction:
                conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
            for undo in reversed(txn.undo):
                undo()
        finally:
            writes._depth -= 1


class JoinedBare:
    """A joined write with no savepoint: its failure fails the whole transaction.

    What the write did cannot be undone alone, so any error becomes
    `JoinedWriteFailed`, which no handler between here and the batch
    catches: the transaction rolls back and the batch is run again with
    savepoints, where the error is handled as it always was.
    """

    __slots__ = ("_txn", "_writes")

    def __init__(self, writes: Writes) -> None:
        self._writes = writes

    def __enter__(self) -> SqliteWriteTxn:
        writes = self._writes
        if not writes.conn.in_transaction:
            raise _rolled_back_already()
        self._txn = txn = SqliteWriteTxn(writes.conn, writes._runs, writes._marks)
        writes._txns.append(txn)
        return txn

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        writes, txn = self._writes, self._txn
        writes._txns.pop()
        if kind is None:
            if txn.undo:
                writes._txns[-1].undo.extend(txn.undo)
            if txn.announced:
                writes._txns[-1].announced.extend(txn.announced)
        elif issubclass(kind, Exception):
            raise JoinedWriteFailed from exc
