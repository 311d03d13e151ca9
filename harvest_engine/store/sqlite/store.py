"""SqliteStore: the DurableStore on one SQLite file (lock, schema, one transaction per decision).

This file opens and closes the store (lock first, then schema and orphan
reclaim) and holds what SQLite reads its own way: checked single-run reads,
claims through the one writer, a visit on a read-only connection of its
own. The reads both stores share are `StoreReads`'s (store/sql); the write
transactions are a `WriteTransactions` the store holds (transactions.py).
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from contextlib import nullcontext
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs

from harvest_engine.errors import DatabaseCorrupt, DatabaseLocked, StorageError
from harvest_engine.store.sql import columns, listing
from harvest_engine.store.sql.commands import SQLITE_COMMANDS
from harvest_engine.store.sql.dialect import SQLITE
from harvest_engine.store.sql.payload_columns import settle_codec
from harvest_engine.store.sql.reads import SQLITE_READS
from harvest_engine.store.sql.schedules import SQLITE_SCHEDULES
from harvest_engine.store.sql.store_reads import StoreReads, StoreSql
from harvest_engine.store.sql.wakeups import NOT_PAUSED_TASK
from harvest_engine.store.sqlite import orphans, readonly, verified_reads, verify
from harvest_engine.store.sqlite.commit_watch import CommitWatch, open_commit_watch
from harvest_engine.store.sqlite.connection import (
    ClosedConnection,
    apply_writer_pragmas,
    connect,
    remove_database_files,
)
from harvest_engine.store.sqlite.faults import BOUNDARY, guard_public_methods
from harvest_engine.store.sqlite.lock import WriterLock
from harvest_engine.store.sqlite.migrations import (
    check_harvest_file,
    check_supported,
    migrate,
    read_version,
)
from harvest_engine.store.sqlite.transactions import WriteTransactions
from harvest_engine.store.sqlite.wake_channel import WakeServer
from harvest_engine.store.sqlite.wal_prealloc import preallocate_wal
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from contextlib import AbstractContextManager
    from pathlib import Path

    from harvest_engine.codecs import PayloadCodec
    from harvest_engine.events import HistoryEvent
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.store.records import ExecutionDetail
    from harvest_engine.store.rows import AttemptKey, ExecutionRecord, TaskRecord

_SQL = StoreSql(SQLITE, SQLITE_READS, SQLITE_SCHEDULES, SQLITE_COMMANDS)


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


@guard_public_methods(skip=("connection", "write"), bases=(StoreReads,))
class SqliteStore(StoreReads):
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
    boundary = BOUNDARY
    bare_batches = True
    """A batch of many runs' decisions takes no savepoints, and is redone with
    them when one fails (runtime/serving/commit_batches.py): the only writer
    never stands back for another worker, so a decision fails only with a bug
    or a fault, and the SAVEPOINT and RELEASE of every decision are saved."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: str,
        lock: WriterLock | None,
        owner: str | None,
    ) -> None:
        super().__init__(_SQL)
        self._conn = conn
        self.path = path
        self._lock = lock
        self._owner = owner
        self._writes = WriteTransactions(conn, path, self.storage_errors)
        # The transactions' own calls, bound here: a write costs no call more.
        # `write` translates its own errors (WriteTransactions.write).
        self.write = self._writes.write
        """One write transaction: BEGIN IMMEDIATE, the body, COMMIT (`WriteTransactions.write`)."""
        self.write_together = self._writes.write_together
        """One transaction every `write()` on this thread joins (`WriteTransactions`)."""
        self.closed = False

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        now: datetime | None = None,
        codec: PayloadCodec | None = None,
    ) -> SqliteStore:
        """Lock, connect, migrate and reclaim orphaned tasks; raise DatabaseLocked if held.

        A file that is refused (foreign, damaged, too new, a negative
        version) is refused before anything is written to it. When the open
        fails, it leaves nothing behind that it made: the lock file it
        created and a database file it created are removed. `now` (the
        runtime's clock; the wall clock by default) stamps the LOST attempt
        rows of the tasks a dead process left RUNNING. `codec` encodes the
        payload columns (CodecRequired when the file needs one not given).
        """
        lock = WriterLock(path)
        # lexists: a dangling symlink or a symlink loop is not ours to remove.
        created = not os.path.lexists(lock.db_path)
        try:
            conn = connect(lock.db_path, codec=codec)
            try:
                version = read_version(conn, str(lock.db_path))
                check_supported(version, str(lock.db_path))
                check_harvest_file(conn, str(lock.db_path), version)
                apply_writer_pragmas(conn, empty=version == 0)
                migrate(conn, str(lock.db_path))
                settle_codec(conn, str(lock.db_path), codec, write=True)
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
    def open_memory(
        cls, uri: str | None = None, *, codec: PayloadCodec | None = None
    ) -> SqliteStore:
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
        conn = connect(uri or ":memory:", uri=uri is not None, codec=codec)
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
        try:
            settle_codec(conn, uri or ":memory:", codec, write=True)
        except BaseException:
            conn.close()
            raise
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
            self._writes.conn = self._conn
            if self._lock is not None:
                self._lock.release()

    # -- write transactions (transactions.py) ---------------------------------

    def add_rollback_listener(self, fn: Callable[[BaseException], None]) -> None:
        self._writes.add_rollback_listener(fn)

    def add_cancel_listener(self, fn: Callable[[list[AttemptKey], str], None]) -> None:
        # One writer process: the announcing commit is this process's own.
        self._writes.add_cancel_listener(fn)

    def release_claim(self, task_id: int) -> None:
        self._writes.released_claims.add(task_id)

    # -- reads SQLite serves its own way --------------------------------------

    def _reading(self) -> AbstractContextManager[sqlite3.Connection]:
        return nullcontext(self._conn)

    def execution(self, exec_id: str) -> ExecutionRecord | None:
        return verified_reads.execution(self._conn, exec_id)

    def exists(self, exec_id: str) -> bool:
        """Whether a run has this id."""
        return verified_reads.exists(self._conn, exec_id)

    def load_events(self, exec_id: str, after_seq: int = 0) -> list[HistoryEvent]:
        events = verified_reads.load_events(self._conn, exec_id, after_seq)
        if after_seq == 0:  # a whole history: its end must match the row
            verify.check_run(self._conn, exec_id)
        return events

    def describe(self, exec_id: str) -> ExecutionDetail | None:
        return verified_reads.describe(self._conn, exec_id)

    def ready_tasks(self, exec_id: str | None, now: datetime) -> list[TaskRecord]:
        if self._writes.released_claims:
            with self.write():
                pass  # puts the released claims back to PENDING first
        sql = (
            f"SELECT {columns.TASK_COLUMNS} FROM harvest_tasks WHERE status = 'PENDING' "
            "AND ready_at <= ?" + NOT_PAUSED_TASK
        )
        args: tuple[Any, ...] = (micros(now),)
        if exec_id is not None:
            sql += " AND exec_id = ?"
            args += (exec_id,)
        rows = self._conn.execute(sql + " ORDER BY ready_at, id", args).fetchall()
        return [columns.task_from_row(row) for row in rows]

    def claim_task(self, task_id: int, now: datetime) -> TaskRecord | None:
        with self.write() as txn:
            return txn.claim_task(task_id, now)

    def claimed_task_ids(self, task_ids: Sequence[int]) -> set[int]:
        """Which of these tasks are still RUNNING (claimed and neither recorded nor dropped)."""
        return verified_reads.claimed_task_ids(self._conn, task_ids)

    def read_pass_ahead(
        self, now: datetime, carried: Sequence[int], flow: bool
    ) -> None:
        """Nothing: a read is no round trip here (the file is this process's)."""

    def read_due_ahead(self, now: datetime, skip: Sequence[str], flow: bool) -> None:
        """Nothing, as `read_pass_ahead`."""

    def save_heartbeat(self, task_id: int, details: str) -> None:
        with self.write():
            self._conn.execute(
                "UPDATE harvest_tasks SET heartbeat = ? WHERE id = ?",
                (details, task_id),
            )

    def data_version(self) -> int:
        """A number that changes when another connection (another process) commits."""
        return readonly.data_version(self._conn)

    def add_commit_listener(self, fn: Callable[[], None]) -> Callable[[], None]:
        return self._writes.commit_listeners.add(fn)

    def open_wake_channel(self) -> WakeServer | None:
        """The serving end of the file's wake channel (None in memory, or when it cannot bind)."""
        if self._lock is None:
            return None
        return WakeServer.open(self.path)

    def open_commit_watch(self) -> CommitWatch | None:
        """An inotify watch on the file and its WAL (None in memory or off Linux)."""
        if self._lock is None:  # an in-memory database has no file to watch
            return None
        return open_commit_watch(self.path)

    def visit_executions(self, filter_: ExecutionFilter) -> Iterator[ExecutionDetail]:
        # The visitor may write through the runtime, so no transaction or lock
        # of the writer's connection stays open while it runs.
        if self._lock is not None:
            # A file: a read-only connection of its own holds the one snapshot.
            conn, _ = readonly.open_read_only(self.path)
            try:
                with readonly.snapshot(conn):
                    yield from listing.visit_executions(conn, SQLITE, filter_)
            finally:
                conn.close()
            return
        # In memory there is one connection: read the page (at most 1000 rows)
        # in one snapshot, then hand the rows out.
        with self._writes.lock, readonly.snapshot(self._conn):
            rows = list(listing.visit_executions(self._conn, SQLITE, filter_))
        yield from rows
