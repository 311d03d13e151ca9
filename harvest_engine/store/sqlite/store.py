"""SqliteStore: the DurableStore on one SQLite file (lock, schema, one transaction per decision).

This file opens and closes the store (lock first, then schema and orphan
reclaim); the class composes its write transactions (store_txn.py) and
its reads outside one (store_reads.py) from base classes.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast
from urllib.parse import parse_qs

from harvest_engine.errors import DatabaseCorrupt, DatabaseLocked, StorageError
from harvest_engine.store.sqlite import orphans
from harvest_engine.store.sqlite.connection import (
    ClosedConnection,
    apply_writer_pragmas,
    connect,
    remove_database_files,
)
from harvest_engine.store.sqlite.faults import guard_public_methods
from harvest_engine.store.sqlite.lock import WriterLock
from harvest_engine.store.sqlite.migrations import (
    check_harvest_file,
    check_supported,
    migrate,
    read_version,
)
from harvest_engine.store.sqlite.run_cache import RunCache
from harvest_engine.store.sqlite.store_reads import StoreReads
from harvest_engine.store.sqlite.store_txn import WriteTransactions
from harvest_engine.store.sqlite.wal_prealloc import preallocate_wal

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from harvest_engine.store.sqlite.write_txn import SqliteWriteTxn


def _require_memory_uri(uri: str) -> None:
    """Accept only a ``file:`` URI that SQLite keeps in memory (mode=memory, vfs=memdb)."""
    if isinstance(uri, str) and uri.startswith("file:"):
        path, _, query = uri[len("file:") :].partition("?")
        params = parse_qs(query.partition("#")[0])
        if (
            path == ":memory:"
            or "memory" in params.get("mode", [])
            or "memdb" in params.get("vfs", [])
        ):
            return
    raise ValueError(
        f"open_in_memory needs an in-memory URI such as 'file:name?mode=memory&cache=shared' "
        f"or 'file:/name?vfs=memdb', got {uri!r}; open a file with SqliteRuntime.open"
    )


@guard_public_methods(skip=("connection",))
class SqliteStore(WriteTransactions, StoreReads):
    """The one DurableStore implementation today: a WAL SQLite file behind a flock.

    Open order is a contract: take the lock first, so a second
    writer fails before it runs any pragma, schema step or orphan reclaim.
    Every public method raises typed errors only (`faults`).
    """

    storage_errors: tuple[type[Exception], ...] = (
        sqlite3.Error,
        StorageError,
        DatabaseCorrupt,
    )

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: str,
        lock: WriterLock | None,
        owner: str | None,
    ) -> None:
        self._conn = conn
        self.path = path
        self._lock = lock
        self._owner = owner
        self._in_txn = False
        self._txn_thread = 0
        self._write_lock = threading.Lock()
        self._rollback_listeners: list[Callable[[BaseException], None]] = []
        self._released_claims: set[int] = set()
        self._txns: list[SqliteWriteTxn] = []  # the transaction, then its savepoints
        # The rows the open transaction read, shared with its savepoints and kept
        # for the next transaction while they are current (run_cache.RunCache).
        self._runs = RunCache()
        self._marks: set[str] = set()  # needs_decision = 1 kept to the commit
        self._joinable = False
        self._bare = False  # joined writes take no savepoint (write_together)
        self._depth = 0
        self.closed = False

    @classmethod
    def open(cls, path: str | Path, *, now: datetime | None = None) -> SqliteStore:
        """Lock, connect, migrate and reclaim orphaned tasks; raise DatabaseLocked if held.

        A file that is refused (foreign, damaged, too new, a negative
        version) is refused before anything is written to it. When the open
        fails, it leaves nothing behind that it made: the lock file it
        created and a database file it created are removed. `now` (the
        runtime's clock; the wall clock by default) stamps the LOST attempt
        rows of the tasks a dead process left RUNNING.
        """
        lock = WriterLock(path)
        # lexists: a dangling symlink or a symlink loop is not ours to remove.
        created = not os.path.lexists(lock.db_path)
        try:
            conn = connect(lock.db_path)
            try:
                version = read_version(conn, str(lock.db_path))
                check_supported(version, str(lock.db_path))
                check_harvest_file(conn, str(lock.db_path), version)
                apply_writer_pragmas(conn, empty=version == 0)
                migrate(conn, str(lock.db_path))
                preallocate_wal(conn, lock.db_path)
                store = cls(conn, str(lock.db_path), lock, None)
                store._reclaim_orphans(now or datetime.now(UTC))
            except BaseException:
                conn.close()
                raise
        except BaseException:
            if created:
                remove_database_files(lock.db_path)
            lock.release(remove=True)
            raise
        return store

    @classmethod
    def open_memory(cls, uri: str | None = None) -> SqliteStore:
        """A private in-memory database, or a shared one named by a ``file:`` URI.

        The lock of an in-memory database is an owner row inside it, so two
        runtimes on one shared in-memory database conflict like two on a file.

        Raises:
            ValueError: `uri` does not name an in-memory database. A file
                opened this way would skip the writer's flock.
            DatabaseLocked: another runtime holds this shared database.
        """
        if uri is not None:
            _require_memory_uri(uri)
        conn = connect(uri or ":memory:", uri=uri is not None)
        try:
            held = conn.execute(
                "SELECT owner FROM harvest_memory_writer_lock"
            ).fetchone()
        except sqlite3.OperationalError:
            held = None  # a fresh database: nothing holds it yet
        if held is not None:
            # Refused before any schema step, like a held file (guide §11).
            conn.close()
            raise DatabaseLocked(
                path=uri or ":memory:", lock_path="harvest_memory_writer_lock"
            )
        migrate(conn, uri or ":memory:")
        owner = uuid.uuid4().hex
        conn.execute("BEGIN IMMEDIATE")
        held = conn.execute(
            "SELECT owner FROM harvest_memory_writer_lock WHERE id = 1"
        ).fetchone()
        if held is not None:
            conn.execute("ROLLBACK")
            conn.close()
            raise DatabaseLocked(
                path=uri or ":memory:", lock_path="harvest_memory_writer_lock"
            )
        conn.execute(
            "INSERT INTO harvest_memory_writer_lock (id, owner) VALUES (1, ?)", (owner,)
        )
        conn.execute("COMMIT")
        return cls(conn, uri or ":memory:", None, owner)

    def _reclaim_orphans(self, now: datetime) -> None:
        # Under the single-writer contract a RUNNING task at open was claimed
        # by a process that died mid-body: record it LOST, run it again
        # (at-least-once, §10).
        with self.write() as txn:
            del txn
            orphans.reclaim(self._conn, now)

    def requeue_claimed_tasks(self) -> None:
        """Put every claimed (RUNNING) task back to PENDING: its body will run again.

        A stopped server's unfinished bodies: this process is alive, so no
        attempt is recorded LOST (only an open finds the tasks of a dead one).
        """
        with self.write() as txn:
            del txn
            self._conn.execute(
                "UPDATE harvest_tasks SET status = 'PENDING', claimed_at = NULL "
                "WHERE status = 'RUNNING'"
            )

    def beat_serving(self) -> None:
        """Touch the writer's lock file: its mtime is the serving heartbeat clients read.

        No commit: a beat a second would wake every reader watching the
        file (the server's own commit watch, the inspector, `harvest tail`).
        An in-memory database has no lock file and no client.
        """
        if self._lock is not None:
            self._lock.beat()

    @property
    def connection(self) -> sqlite3.Connection:
        """The raw connection (store-internal modules and test fixtures only)."""
        return self._conn

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            if self._owner is not None:
                self._conn.execute(
                    "DELETE FROM harvest_memory_writer_lock WHERE owner = ?",
                    (self._owner,),
                )
            self._conn.close()
        finally:
            self._conn = cast("sqlite3.Connection", ClosedConnection(self.path))
            if self._lock is not None:
                self._lock.release()
