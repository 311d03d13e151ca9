"""SideTables: the WriteTxn methods on the tables a decision seldom touches, written once.

Ledger, workflow logs, schedules, retention, client commands and mutex
queues run the same statements on both stores. A write transaction class
subclasses `SideTables`, names its dialect's statements (`_side`, a class
attribute: a transaction costs no call more), and says what is its own
through the hooks: the connection a statement runs on,
the savepoint that keeps a bad log line from failing a decision, and what
its memory of the transaction must forget (SQLite's run cache, Postgres's
quiet runs) or lock (Postgres's advisory key lock of a mutex queue).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from harvest_engine.store.sql.commands import (
    POSTGRES_COMMANDS,
    SQLITE_COMMANDS,
    command_record,
)
from harvest_engine.store.sql.dialect import POSTGRES, SQLITE, Dialect
from harvest_engine.store.sql.flow import FlowTables
from harvest_engine.store.sql.flow_sql import flow_sql
from harvest_engine.store.sql.headers import HeaderSql
from harvest_engine.store.sql.retention import POSTGRES_RETENTION, SQLITE_RETENTION
from harvest_engine.store.sql.schedules import POSTGRES_SCHEDULES, SQLITE_SCHEDULES
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from collections.abc import Sequence
    from contextlib import AbstractContextManager
    from datetime import datetime

    from harvest_engine.store.operations import ScheduleRow
    from harvest_engine.store.rows import CommandRecord, LedgerEntry
    from harvest_engine.store.sql.commands import Commands
    from harvest_engine.store.sql.executes import Executes
    from harvest_engine.store.sql.flow import ReadBehind
    from harvest_engine.store.sql.retention import Retention
    from harvest_engine.store.sql.schedules import Schedules


class SideSql:
    """One dialect's side-table statements, rendered once (built at import)."""

    def __init__(
        self,
        dialect: Dialect,
        schedules: Schedules,
        retention: Retention,
        commands: Commands,
    ) -> None:
        r = dialect.render
        self.flow = flow_sql(dialect)
        self.schedules = schedules
        self.retention = retention
        self.commands = commands
        self.headers = HeaderSql(dialect)
        self.ledger = r(
            "INSERT INTO harvest_llm_ledger (exec_id, activity, attempt, model, "
            "input_tokens, output_tokens, latency, recorded_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        )
        self.last_log_line = r(
            "SELECT COALESCE(MAX(seq), 0) FROM harvest_workflow_logs "
            "WHERE exec_id = ? AND marker = 0"
        )
        self.log_marker = r(
            "INSERT INTO harvest_workflow_logs (exec_id, seq, at, message, marker) "
            "VALUES (?, ?, ?, ?, 1) ON CONFLICT DO NOTHING"
        )
        self.log_line = r(
            "INSERT INTO harvest_workflow_logs (exec_id, seq, at, message) "
            "VALUES (?, ?, ?, ?)"
        )
        self.last_queued = r("SELECT MAX(queued_at) FROM harvest_mutexes WHERE key = ?")
        self.enqueue = r(
            "INSERT INTO harvest_mutexes (key, exec_id, queued_at) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING"
        )
        self.held = r("SELECT 1 FROM harvest_mutexes WHERE key = ? AND granted = 1")
        self.queue_head = r(
            "SELECT exec_id FROM harvest_mutexes WHERE key = ? AND granted = 0 "
            "ORDER BY queued_at, exec_id LIMIT 1"
        )
        self.next_lock_seq = r(
            "INSERT INTO harvest_meta (key, value) VALUES (?, '1') "
            "ON CONFLICT (key) DO UPDATE SET value = "
            "CAST(CAST(harvest_meta.value AS BIGINT) + 1 AS TEXT) RETURNING value"
        )
        self.grant = r(
            "UPDATE harvest_mutexes SET granted = 1, lock_seq = ? "
            "WHERE key = ? AND exec_id = ?"
        )
        self.release = r("DELETE FROM harvest_mutexes WHERE key = ? AND exec_id = ?")
        # A sealed run's places: each key's next head may be granted now.
        self.drop_places = r(
            "DELETE FROM harvest_mutexes WHERE exec_id = ? RETURNING key"
        )


SQLITE_SIDE = SideSql(SQLITE, SQLITE_SCHEDULES, SQLITE_RETENTION, SQLITE_COMMANDS)
POSTGRES_SIDE = SideSql(
    POSTGRES, POSTGRES_SCHEDULES, POSTGRES_RETENTION, POSTGRES_COMMANDS
)


class SideTables(ABC):
    """WriteTxn methods on the ledger, headers, logs, schedules, retention, commands and mutexes."""

    @property
    @abstractmethod
    def _side(self) -> SideSql:
        """This store's side-table statements (SQLITE_SIDE or POSTGRES_SIDE)."""

    @abstractmethod
    def _side_conn(self) -> Executes:
        """The connection a side-table statement runs on."""

    @abstractmethod
    def _log_savepoint(self) -> AbstractContextManager[object]:
        """A savepoint around a decision's log lines: a line that fails drops them, not it."""

    @abstractmethod
    def _mutex_key_lock(self, key: str) -> None:
        """Serialise a mutex queue's changes where several writers run."""

    @abstractmethod
    def _mutex_queued(self, exec_id: str) -> None:
        """A run joined a mutex queue: what the transaction remembers of it."""

    @abstractmethod
    def _wake_run(self, exec_id: str) -> None:
        """Flag a RUNNING run for a decision (a mutex it waits for came free)."""

    @abstractmethod
    def _command_holds(self, row_id: int, exec_ids: Sequence[str]) -> None:
        """Lock the runs client command `row_id` is about to change (`claim_command`'s `hold`)."""

    @abstractmethod
    def _purging(self) -> None:
        """Runs are about to go unfollowed one by one."""

    def _flow_worker(self) -> str:
        """The worker id a queue's admissions are counted under (one writer: "local")."""
        return "local"

    def _flow_read_behind(self) -> ReadBehind | None:
        """What reads the runs an admission locks, behind the lock (none: read later)."""
        return None

    def flow(self) -> FlowTables:
        """The flow-control tables of this transaction (queues, waits, waiting tasks)."""
        return FlowTables(
            self._side.flow,
            self._side_conn(),
            self._flow_worker(),
            self._flow_read_behind(),
        )

    # -- the LLM ledger ------------------------------------------------------

    def add_ledger(self, entries: Sequence[LedgerEntry]) -> None:
        if not entries:
            return
        cursor = self._side_conn().cursor()
        try:
            cursor.executemany(
                self._side.ledger,
                [
                    (
                        e.exec_id,
                        e.activity,
                        e.attempt,
                        e.model,
                        e.input_tokens,
                        e.output_tokens,
                        e.latency,
                        micros(e.recorded_at),
                    )
                    for e in entries
                ],
            )
        finally:
            cursor.close()

    # -- headers (interceptors) ----------------------------------------------------

    def put_headers(self, exec_id: str, kind: str, ref: str, text: str) -> None:
        self._side.headers.put(self._side_conn(), exec_id, kind, ref, text)

    def headers(self, exec_id: str, kind: str, ref: str) -> str | None:
        return self._side.headers.get(self._side_conn(), exec_id, kind, ref)

    def staged_signal_headers(self, exec_id: str) -> list[str]:
        return self._side.headers.staged(self._side_conn(), exec_id)

    # -- logs ---------------------------------------------------------------

    def append_log_lines(
        self,
        exec_id: str,
        lines: Sequence[tuple[int, datetime, str]],
        max_lines: int | None,
    ) -> None:
        """Store lines `(line_no, at, message)`, best effort: a failure drops them.

        A line a re-run cycle emits again is skipped; past `max_lines` one
        marker row is kept.
        """
        if not lines:
            return
        side = self._side
        with self._log_savepoint():
            conn = self._side_conn()
            row = conn.execute(side.last_log_line, (exec_id,)).fetchone()
            stored = int(row[0]) if row is not None else 0
            for line_no, at, message in lines:
                if line_no <= stored:
                    continue  # a re-run cycle emitted it again
                if max_lines is not None and line_no > max_lines:
                    marker = f"log truncated at {max_lines} lines"
                    args = (exec_id, max_lines + 1, micros(at), marker)
                    conn.execute(side.log_marker, args)
                    continue
                conn.execute(side.log_line, (exec_id, line_no, micros(at), message))

    # -- schedules and retention (issue 5) ------------------------------------

    def schedule(self, workflow_name: str) -> ScheduleRow | None:
        return self._side.schedules.get(self._side_conn(), workflow_name, lock=True)

    def put_schedule(
        self,
        *,
        workflow_name: str,
        spec: str,
        input: str,
        overlap: str,
        max_active_runs: int,
        next_fire_at: datetime,
        paused: bool,
        now: datetime,
    ) -> None:
        self._side.schedules.put(
            self._side_conn(),
            workflow_name=workflow_name,
            spec=spec,
            input=input,
            overlap=overlap,
            max_active_runs=max_active_runs,
            next_fire_at=next_fire_at,
            paused=paused,
            now=now,
        )

    def update_schedule(self, workflow_name: str, now: datetime, **fields: Any) -> None:
        self._side.schedules.update(self._side_conn(), workflow_name, now, **fields)

    def delete_schedule(self, workflow_name: str) -> bool:
        return self._side.schedules.delete(self._side_conn(), workflow_name)

    def active_schedule_runs(
        self, workflow_name: str, id_prefix: str, now: datetime
    ) -> int:
        conn = self._side_conn()
        return self._side.schedules.active_runs(conn, workflow_name, id_prefix, now)

    def purge_terminal_batch(self, cutoff: datetime, limit: int) -> int:
        self._purging()
        return self._side.retention.purge_batch(self._side_conn(), cutoff, limit)

    # -- client commands (serving) ------------------------------------------------

    def claim_command(self, row_id: int, hold: Sequence[str] = ()) -> bool:
        claimed = self._side.commands.claim(self._side_conn(), row_id)
        if hold:
            self._command_holds(row_id, hold)  # its read brings the claim's answer
        return claimed.fetchone() is not None

    def claim_command_row(
        self, row_id: int, hold: Sequence[str] = ()
    ) -> CommandRecord | None:
        claimed = self._side.commands.claim_row(self._side_conn(), row_id)
        if hold:
            self._command_holds(row_id, hold)  # its read brings the claim's answer
        row = claimed.fetchone()
        return None if row is None else command_record(row)

    def finish_command(
        self, row_id: int, reply: str, exec_id: str | None, now: datetime
    ) -> None:
        self._side.commands.finish(self._side_conn(), row_id, reply, exec_id, now)

    def purge_applied_commands(
        self, cutoff: datetime, refused_cutoff: datetime, limit: int
    ) -> int:
        conn = self._side_conn()
        return self._side.commands.purge_applied(conn, cutoff, refused_cutoff, limit)

    # -- mutexes ------------------------------------------------------------

    def enqueue_mutex(self, key: str, exec_id: str, at: datetime) -> None:
        self._mutex_queued(exec_id)
        self._mutex_key_lock(key)
        conn = self._side_conn()
        # queued_at orders the queue; it only grows per key, so two requests
        # at one clock instant keep their arrival order.
        row = conn.execute(self._side.last_queued, (key,)).fetchone()
        last = row[0] if row is not None else None
        queued = max(micros(at), int(last) + 1 if last is not None else 0)
        conn.execute(self._side.enqueue, (key, exec_id, queued))

    def grant_mutex(self, key: str, exec_id: str) -> int | None:
        self._mutex_key_lock(key)
        conn = self._side_conn()
        side = self._side
        if conn.execute(side.held, (key,)).fetchone() is not None:
            return None
        head = conn.execute(side.queue_head, (key,)).fetchone()
        if head is None or head[0] != exec_id:
            return None
        row = conn.execute(side.next_lock_seq, (f"mutex_lock_seq:{key}",)).fetchone()
        lock_seq = int(row[0]) if row is not None else 1
        conn.execute(side.grant, (lock_seq, key, exec_id))
        return lock_seq

    def release_mutex(self, key: str, exec_id: str) -> None:
        self._mutex_key_lock(key)
        self._side_conn().execute(self._side.release, (key, exec_id))
        self._wake_mutex_head(key)

    def _drop_mutex_places(self, exec_id: str) -> None:
        """Drop a sealed run's locks and queue places; wake each key's next waiter."""
        rows = self._side_conn().execute(self._side.drop_places, (exec_id,))
        for key in sorted({str(row[0]) for row in rows.fetchall()}):
            self._wake_mutex_head(key)

    def _wake_mutex_head(self, key: str) -> None:
        """Wake the run heading `key`'s queue when the key is free: it is granted next.

        A mutex waiter keeps no decision flag while it waits (it would be
        decided again every pass for nothing); a release, or the seal of a
        holder or of a run ahead of it, flags the one run that can go on.
        """
        conn, side = self._side_conn(), self._side
        if conn.execute(side.held, (key,)).fetchone() is not None:
            return
        head = conn.execute(side.queue_head, (key,)).fetchone()
        if head is not None:
            self._wake_run(str(head[0]))
