"""PostgresStore: the DurableStore on one Postgres database, shared by many workers.

Each store is one worker: a connection for its transactions and reads, and a
second one for lease renewals and heartbeats (they never wait for a decision
of this worker). Claims are leases (leases.py); decisions lock their run's
row (write_txn.py). Errors of the server or the network are `psycopg.Error`
inside a transaction and typed errors (`faults`) at every public method; a
broken connection is replaced on the next call. The shared reads are `StoreReads`'s
(store/sql), on its connection under its lock (`_reading`), plus the reads leases change.
"""

from __future__ import annotations

import collections
import os
import socket
import threading
import uuid
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine.errors import (
    DatabaseClosed,
    DatabaseCorrupt,
    HarvestInternalError,
    StorageError,
)
from harvest_engine.store.postgres import heartbeat, leases, notify, pipelined
from harvest_engine.store.postgres.ahead import MISSING, AheadReads, Answers, Reads
from harvest_engine.store.postgres.connection import connect, reconnect, redact
from harvest_engine.store.postgres.faults import BOUNDARY, guard_public_methods
from harvest_engine.store.postgres.joined_write import Depth, JoinedWrite
from harvest_engine.store.postgres.migrations import migrate
from harvest_engine.store.postgres.txn_memory import TxnMemory
from harvest_engine.store.postgres.write_txn import PostgresWriteTxn
from harvest_engine.store.postgres.young_tables import YoungTables
from harvest_engine.store.sql import listing
from harvest_engine.store.sql.commands import POSTGRES_COMMANDS
from harvest_engine.store.sql.commit_listeners import CommitListeners
from harvest_engine.store.sql.dialect import POSTGRES
from harvest_engine.store.sql.payload_columns import settle_codec
from harvest_engine.store.sql.reads import POSTGRES_READS
from harvest_engine.store.sql.schedules import POSTGRES_SCHEDULES
from harvest_engine.store.sql.store_reads import StoreReads, StoreSql

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from datetime import datetime, timedelta

    from harvest_engine.codecs import PayloadCodec
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.store.postgres.notice_watch import NoticeWatch
    from harvest_engine.store.records import ExecutionDetail
    from harvest_engine.store.rows import TaskRecord

_SQL = StoreSql(
    POSTGRES,
    POSTGRES_READS,
    POSTGRES_SCHEDULES,
    POSTGRES_COMMANDS,
    (leases.DUE_SOURCE,),
)
_REQUEUE_MINE = (
    "UPDATE harvest_tasks SET status = 'PENDING', claimed_at = NULL, worker_id = NULL, "
    "lease_expires_at = NULL WHERE status = 'RUNNING' AND worker_id = %s"
)


def default_worker_id() -> str:
    """A worker id unique across machines and processes: host, pid and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@guard_public_methods(
    skip=("write", "write_together", "connection", "connect"),
    bases=(AheadReads, StoreReads),
)
class PostgresStore(AheadReads):
    """The DurableStore on Postgres; any number of them, in any processes, share one database."""

    boundary = BOUNDARY
    bare_batches = False  # a decision stands back for another worker's lock
    storage_errors: tuple[type[Exception], ...] = (
        psycopg.Error,
        StorageError,
        DatabaseCorrupt,
    )

    def __init__(
        self,
        conn: psycopg.Connection[tuple[Any, ...]],
        lease_conn: psycopg.Connection[tuple[Any, ...]],
        dsn: str,
        worker_id: str,
        lease: timedelta,
        codec: PayloadCodec | None = None,
    ) -> None:
        super().__init__(_SQL)
        self._codec, self._conn, self._lease_conn = codec, conn, lease_conn
        self.dsn = dsn
        self.path = redact(dsn)
        self.worker_id = worker_id
        self.lease = lease
        self._lock = threading.RLock()
        self._lease_lock = threading.Lock()
        self._in_txn = False
        self._txn_thread = 0
        self._joinable = False
        self._outer: PostgresWriteTxn | None = None
        self._task_ids: collections.deque[int] = collections.deque()
        self._depth = Depth()
        self._rollback_listeners: list[Callable[[BaseException], None]] = []
        self.commit_listeners = CommitListeners()
        self.add_commit_listener = self.commit_listeners.add
        self._released_claims: set[int] = set()
        self._listeners: list[notify.Listener] = []
        self._cancels = notify.CancelListeners()
        self.closed = False
        self._renewer = leases.Renewer(self.renew_leases, lease)
        self._young = YoungTables()

    @classmethod
    def connect(
        cls,
        dsn: str,
        *,
        worker_id: str | None = None,
        lease: timedelta = leases.DEFAULT_LEASE,
        codec: PayloadCodec | None = None,
    ) -> PostgresStore:
        """Connect, create or upgrade the schema, and start renewing leases.

        A `worker_id` given again after a crash frees the tasks that the dead
        process held at once, instead of after their lease.

        Raises:
            NotAHarvestDatabase: a wrong DSN, an unreachable server, a missing
                database, or a database with foreign harvest-named tables.
            SchemaTooNew: a newer harvest wrote the schema (nothing changed).
        """
        where = redact(dsn) if isinstance(dsn, str) else repr(dsn)
        if worker_id is not None and (not isinstance(worker_id, str) or not worker_id):
            raise ValueError(f"worker_id must be a non-empty string, got {worker_id!r}")
        conn = connect(dsn, codec)
        try:
            migrate(conn, where)
            settle_codec(conn, where, codec, write=True, mark="%s")
            lease_conn = connect(dsn, codec)
        except BaseException:
            conn.close()
            raise
        me = worker_id or default_worker_id()
        if worker_id is not None:
            leases.release_own(lease_conn, me)
        return cls(conn, lease_conn, dsn, me, lease, codec)

    @property
    def connection(self) -> psycopg.Connection[tuple[Any, ...]]:
        """The raw connection (store-internal modules and test fixtures only)."""
        return self._conn

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._renewer.stop()
        for listener in self._listeners:
            listener.stop()
        with self._lock:
            self._conn.close()
        with self._lease_lock:
            self._lease_conn.close()

    def _live(self) -> psycopg.Connection[tuple[Any, ...]]:
        """The connection, replaced if broken; held writes of the open transaction sent first."""
        if self.closed:
            raise DatabaseClosed(path=self.path)
        if self._conn.broken or self._conn.closed:
            self._conn = reconnect(self.dsn, self._codec)
        elif self._outer is not None and self._outer.memory.held.waiting:
            self._outer.memory.flush(self._conn)
        return self._conn

    def _lease_live(self) -> psycopg.Connection[tuple[Any, ...]]:
        """The lease connection (the caller holds `_lease_lock`), replaced when broken."""
        if self.closed:
            raise DatabaseClosed(path=self.path)
        if self._lease_conn.broken or self._lease_conn.closed:
            self._lease_conn = reconnect(self.dsn, self._codec)
        return self._lease_conn

    def write(self) -> AbstractContextManager[PostgresWriteTxn]:
        """One write transaction; a psycopg failure rolls it back and arrives typed.

        It runs in pipeline mode (`pipelined`): writes travel without waiting
        for their answers, and it returns once the COMMIT is answered. Inside
        `write_together` a write on the same thread is a savepoint
        (`JoinedWrite`): its error undoes only its own changes.
        """
        if self._in_txn and self._txn_thread == threading.get_ident():
            if not self._joinable or self._outer is None:
                raise HarvestInternalError("nested write transaction")
            return JoinedWrite(self._conn, self._outer, self._depth)
        return self._write()

    @contextmanager
    def _write(self) -> Iterator[PostgresWriteTxn]:
        with self._lock:
            conn = self._live_or_typed()
            memory = TxnMemory(task_ids=self._task_ids, cursors=self.ahead.cursors)
            txn = PostgresWriteTxn(conn, self.worker_id, self.lease, memory)
            self._in_txn = True
            self._txn_thread = threading.get_ident()
            self._outer = txn

            def before_commit() -> None:
                if not txn.memory.verify(conn, wake=self.worker_id):
                    conn.execute(notify.NOTIFY, (self.worker_id,))

            try:
                with pipelined.transaction(conn, before_commit, memory.cursors):
                    self._apply_released_claims(conn)
                    yield txn
            except BaseException as exc:
                # Released with the next write; a no-op for rows the rollback undid.
                self._released_claims.update(txn.claimed)
                self._rolled_back(txn, exc)
                typed = memory.why(exc, conn) or BOUNDARY.translate(exc, self.path)
                if typed is exc:
                    raise
                raise typed from exc
            else:
                self._released_claims.clear()
                self._young.after_commit(conn, memory.started)
                for attempts, reason in memory.announced:  # before its own NOTIFY
                    self._cancels(attempts, reason)
                for listener in self.commit_listeners.fns:
                    listener()
            finally:
                self.ahead.forget()  # a commit (or one that may have landed) moved things
                self._in_txn = False
                self._txn_thread = 0
                self._outer = None

    def _live_or_typed(self) -> psycopg.Connection[tuple[Any, ...]]:
        try:
            return self._live()
        except psycopg.Error as exc:
            raise BOUNDARY.translate(exc, self.path) from exc

    def _rolled_back(self, txn: PostgresWriteTxn, exc: BaseException) -> None:
        for undo in reversed(txn.undo):
            undo()
        if isinstance(exc, self.storage_errors):
            for listener in self._rollback_listeners:
                listener(exc)

    @contextmanager
    def write_together(self, *, savepoints: bool = True) -> Iterator[PostgresWriteTxn]:
        """One transaction that every `write()` on this thread joins until it ends.

        Joined writes always take their savepoint here (`savepoints` is a
        hint this store does not take).
        """
        del savepoints
        with self.write() as txn:
            joined = self._joinable
            self._joinable = True
            try:
                yield txn
            finally:
                self._joinable = joined

    def listen(self, on_wake: Callable[[], None], peers: notify.Peers) -> None:
        """Call `on_wake()` (from a thread) when another worker or a client commits; hear cancels."""
        listener = notify.Listener(self.dsn, self.worker_id, on_wake, self._cancels)
        self._listeners.append(listener.told(peers))

    def add_cancel_listener(self, fn: notify.OnCancel) -> None:
        self._cancels.add(fn)  # heard through `listen`'s thread, from every worker

    def add_rollback_listener(self, fn: Callable[[BaseException], None]) -> None:
        self._rollback_listeners.append(fn)

    def release_claim(self, task_id: int) -> None:
        self._released_claims.add(task_id)

    def _apply_released_claims(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        if self._released_claims:
            released = (self.worker_id, list(self._released_claims))
            conn.execute(_REQUEUE_MINE + " AND id = ANY(%s)", released)

    def requeue_claimed_tasks(self) -> None:
        """Put this worker's claimed tasks back to PENDING (its own unfinished bodies only)."""
        with self.write():
            self._conn.execute(_REQUEUE_MINE, (self.worker_id,))

    def beat_serving(self) -> None:
        """Record this worker's heartbeat in harvest_meta (the server's clock; the latest wins)."""
        with self.write():
            heartbeat.beat(self._conn)

    def open_commit_watch(self) -> NoticeWatch | None:
        # Poked by the LISTEN thread (notice_watch.py); without one, polled.
        return self._listeners[0].watch() if self._listeners else None

    def open_wake_channel(self) -> None:
        return None  # NOTIFY wakes a Postgres client (client_notices.py)

    def data_version(self) -> int:
        """A number that changes when another worker (another process) commits a write."""
        sql = "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint"
        with self._lock:
            row = self._live().execute(sql).fetchone()
        return int(row[0]) if row is not None else 0

    # -- leases ---------------------------------------------------------------

    def renew_leases(self) -> int:
        """Extend every lease this worker holds (the renewal timer calls it)."""
        with self._lease_lock:
            if self.closed:
                return 0
            return leases.renew(self._lease_live(), self.worker_id, self.lease)

    def claim_task(self, task_id: int, now: datetime) -> TaskRecord | None:
        with self.write() as txn:
            return txn.claim_task(task_id, now)

    def claimed_task_ids(self, task_ids: Sequence[int]) -> set[int]:
        """Which of these tasks this worker still holds (RUNNING under its lease)."""
        got = self.ahead.take(("carried", tuple(task_ids)))
        if got is not MISSING:
            return set(got)
        with self._lock:
            return leases.still_claimed(self._live(), task_ids, self.worker_id)

    def _own_pass_reads(self, now: datetime, carried: Sequence[int]) -> Reads:
        ids, me = tuple(carried), self.worker_id
        if self._released_claims:  # the ready tasks are read after they go back
            return {("carried", ids): lambda c: leases.still_claimed(c, ids, me)}
        if not ids:
            return {"ready": lambda c: leases.ready_tasks(c, None, now)}

        def both(c: Any) -> Answers:
            ready, mine = leases.ready_and_claimed(c, ids, me, now)
            return Answers({"ready": ready, ("carried", ids): mine})

        return {"own tasks": both}

    def save_heartbeat(self, task_id: int, details: str) -> None:
        # On the lease connection: a heartbeat from a body's thread never waits
        # for this worker's decision, and it renews the attempt's lease.
        with self._lease_lock:
            self._lease_live().execute(
                "UPDATE harvest_tasks SET heartbeat = %s, "
                f"lease_expires_at = clock_timestamp() + {leases.LEASE_OF_TASK} "
                "WHERE id = %s AND worker_id = %s",
                (details, self.lease, task_id, self.worker_id),
            )

    def expired_leases(self) -> list[TaskRecord]:
        """RUNNING tasks whose worker stopped renewing: any live worker may retake them."""
        with self._lock:
            return leases.expired(self._live())

    # -- reads outside a transaction (the shared ones: StoreReads) -------------

    @contextmanager
    def _reading(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        with self._lock:
            yield self._live()

    def ready_tasks(self, exec_id: str | None, now: datetime) -> list[TaskRecord]:
        if self._released_claims:
            with self.write():
                pass  # puts the released claims back to PENDING first
        got = MISSING if exec_id is not None else self.ahead.take("ready", now)
        if got is not MISSING:
            return list(got)
        with self._lock:
            return leases.ready_tasks(self._live(), exec_id, now)

    def visit_executions(self, filter_: ExecutionFilter) -> Iterator[ExecutionDetail]:
        # One statement is one snapshot; the page (at most 1000 rows) is read
        # whole before the visitor runs, so it may write through the runtime.
        with self._lock:
            rows = list(listing.visit_executions(self._live(), POSTGRES, filter_))
        yield from rows
