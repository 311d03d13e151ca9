"""SqliteStore: the DurableStore on one SQLite file (lock, schema, one transaction per decision)."""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs

from harvest_engine.errors import (
    DatabaseCorrupt,
    DatabaseLocked,
    HarvestInternalError,
    StorageError,
)
from harvest_engine.store.sqlite import commands as command_sql
from harvest_engine.store.sqlite import (
    listing,
    operator_reads,
    orphans,
    queries,
    readonly,
    verify,
    wakeups,
)
from harvest_engine.store.sqlite import schedules as schedule_sql
from harvest_engine.store.sqlite.commit_watch import CommitWatch, open_commit_watch
from harvest_engine.store.sqlite.connection import (
    ClosedConnection,
    apply_writer_pragmas,
    connect,
    remove_database_files,
)
from harvest_engine.store.sqlite.faults import (
    TRANSLATED,
    guard_public_methods,
    translate,
)
from harvest_engine.store.sqlite.lock import WriterLock
from harvest_engine.store.sqlite.migrations import (
    check_harvest_file,
    check_supported,
    migrate,
    read_version,
)
from harvest_engine.store.sqlite.run_cache import RunCache
from harvest_engine.store.sqlite.wakeups import PANIC_BACKOFF
from harvest_engine.store.sqlite.wal_prealloc import preallocate_wal
from harvest_engine.store.sqlite.write_txn import SqliteWriteTxn
from harvest_engine.store.txn_protocol import JoinedWriteFailed
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path

    from harvest_engine.events import HistoryEvent
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.store.operations import LedgerTotals, ScheduleRow
    from harvest_engine.store.records import (
        ActivityAttempt,
        ExecutionDetail,
        ExecutionPage,
        LedgerRow,
        LogLine,
        MutexRow,
        PendingTask,
        StagedSignal,
        TimerRow,
    )
    from harvest_engine.store.rows import CommandRecord, ExecutionRecord, TaskRecord


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


@guard_public_methods(skip=("write", "connection"))
class SqliteStore:
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
                apply_writer_pragmas(conn)
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
            txn = SqliteWriteTxn(self._conn, runs)
            self._txns.append(txn)
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                self._in_txn = True
                self._txn_thread = threading.get_ident()
                runs.begin(self._conn)  # the last commit's rows, if still current
                self._apply_released_claims()
                yield txn
                runs.before_commit(self._conn)
                self._conn.execute("COMMIT")
            except BaseException as exc:
                runs.clear()
                self._rolled_back(txn, exc)
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
        txn = SqliteWriteTxn(self._conn, self._runs)
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
        txn = SqliteWriteTxn(self._conn, self._runs)
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

    def pending_commands(self, limit: int) -> list[CommandRecord]:
        """Client commands not applied yet, in arrival order."""
        return command_sql.pending(self._conn, limit)

    # -- reads outside a transaction ----------------------------------------

    def execution(self, exec_id: str) -> ExecutionRecord | None:
        return queries.execution(self._conn, exec_id)

    def exists(self, exec_id: str) -> bool:
        """Whether a run has this id."""
        return queries.exists(self._conn, exec_id)

    def load_events(self, exec_id: str, after_seq: int = 0) -> list[HistoryEvent]:
        events = queries.load_events(self._conn, exec_id, after_seq)
        if after_seq == 0:  # a whole history: its end must match the row
            verify.check_run(self._conn, exec_id)
        return events

    def runs_needing_decision(self, now: datetime) -> list[str]:
        at = micros(now)
        rows = self._conn.execute(
            "SELECT exec_id FROM harvest_executions e WHERE state = 'RUNNING' AND ("
            " needs_decision = 1"
            " OR (deadline IS NOT NULL AND deadline <= ?)"
            " OR EXISTS (SELECT 1 FROM harvest_timers t WHERE t.exec_id = e.exec_id"
            "            AND t.fire_at <= ?)"
            ") AND NOT (" + PANIC_BACKOFF + " AND (deadline IS NULL OR deadline > ?))"
            " ORDER BY id",
            (at, at, at, at),
        ).fetchall()
        return [r[0] for r in rows]

    def running_exec_ids(self) -> list[str]:
        """Every RUNNING run, oldest first."""
        rows = self._conn.execute(
            "SELECT exec_id FROM harvest_executions WHERE state = 'RUNNING' ORDER BY id"
        ).fetchall()
        return [r[0] for r in rows]

    def ready_tasks(self, exec_id: str | None, now: datetime) -> list[TaskRecord]:
        if self._released_claims:
            with self.write():
                pass  # puts the released claims back to PENDING first
        sql = (
            f"SELECT {queries.TASK_COLUMNS} FROM harvest_tasks WHERE status = 'PENDING' "
            "AND ready_at <= ?"
        )
        args: tuple[Any, ...] = (micros(now),)
        if exec_id is not None:
            sql += " AND exec_id = ?"
            args += (exec_id,)
        rows = self._conn.execute(sql + " ORDER BY ready_at, id", args).fetchall()
        return [queries.task_from_row(row) for row in rows]

    def claim_task(self, task_id: int, now: datetime) -> TaskRecord | None:
        with self.write() as txn:
            return txn.claim_task(task_id, now)

    def claimed_task_ids(self, task_ids: Sequence[int]) -> set[int]:
        """Which of these tasks are still RUNNING (claimed and neither recorded nor dropped)."""
        return queries.claimed_task_ids(self._conn, task_ids)

    def save_heartbeat(self, task_id: int, details: str) -> None:
        with self.write():
            self._conn.execute(
                "UPDATE harvest_tasks SET heartbeat = ? WHERE id = ?",
                (details, task_id),
            )

    def next_wakeup(self, exec_id: str) -> datetime | None:
        row = self._conn.execute(
            "SELECT MIN(t) FROM ("
            " SELECT MIN(fire_at) AS t FROM harvest_timers WHERE exec_id = ?"
            " UNION ALL SELECT MIN(ready_at) FROM harvest_tasks WHERE exec_id = ?"
            "  AND status = 'PENDING')",
            (exec_id, exec_id),
        ).fetchone()
        return queries.opt_time(row[0])

    def earliest_due(self, now: datetime) -> datetime | None:
        """The earliest time any waiting row comes due (`now` for ready work); None if none."""
        return wakeups.earliest_due(self._conn, now)

    def data_version(self) -> int:
        """A number that changes when another connection (another process) commits."""
        return readonly.data_version(self._conn)

    def open_commit_watch(self) -> CommitWatch | None:
        """An inotify watch on the file and its WAL (None in memory or off Linux)."""
        if self._lock is None:  # an in-memory database has no file to watch
            return None
        return open_commit_watch(self.path)

    def activity_attempts(
        self, exec_id: str, name: str | None
    ) -> list[ActivityAttempt]:
        return queries.activity_attempts(self._conn, exec_id, name)

    def describe(self, exec_id: str) -> ExecutionDetail | None:
        return queries.describe(self._conn, exec_id)

    def pending_tasks(self, exec_id: str) -> list[PendingTask]:
        return queries.pending_tasks(self._conn, exec_id)

    def timers(self, exec_id: str) -> list[TimerRow]:
        return queries.timers(self._conn, exec_id)

    def staged_signals(self, exec_id: str) -> list[StagedSignal]:
        return queries.staged_signals(self._conn, exec_id)

    def mutexes(self, exec_id: str) -> list[MutexRow]:
        return queries.mutexes(self._conn, exec_id)

    def llm_ledger(self, exec_id: str) -> list[LedgerRow]:
        return queries.llm_ledger(self._conn, exec_id)

    def workflow_logs(self, exec_id: str) -> list[LogLine]:
        return queries.workflow_logs(self._conn, exec_id)

    # -- operating (issue 5) ----------------------------------------------------

    def list_executions(self, filter_: ExecutionFilter) -> ExecutionPage:
        return listing.list_executions(self._conn, filter_)

    def visit_executions(self, filter_: ExecutionFilter) -> Iterator[ExecutionDetail]:
        # The visitor may write through the runtime, so no transaction or lock
        # of the writer's connection stays open while it runs.
        if self._lock is not None:
            # A file: a read-only connection of its own holds the one snapshot.
            conn, _ = readonly.open_read_only(self.path)
            try:
                with readonly.snapshot(conn):
                    yield from listing.visit_executions(conn, filter_)
            finally:
                conn.close()
            return
        # In memory there is one connection: read the page (at most 1000 rows)
        # in one snapshot, then hand the rows out.
        with self._write_lock, readonly.snapshot(self._conn):
            rows = list(listing.visit_executions(self._conn, filter_))
        yield from rows

    def counts_by_state(self) -> dict[str, int]:
        return listing.counts_by_state(self._conn)

    def list_schedules(self) -> list[ScheduleRow]:
        return schedule_sql.list_all(self._conn)

    def due_schedules(self, now: datetime) -> list[ScheduleRow]:
        return schedule_sql.due(self._conn, now)

    def llm_totals(self, exec_id: str) -> LedgerTotals:
        return operator_reads.llm_totals(self._conn, exec_id)
