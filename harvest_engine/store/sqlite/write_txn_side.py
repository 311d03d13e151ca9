"""The side tables of a SQLite write transaction: ledger, logs, schedules, retention, commands, mutexes.

`SqliteWriteTxn` (write_txn.py) inherits these; they need only its
connection and its run cache (the tables a decision seldom touches).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.store.sqlite import commands as command_sql
from harvest_engine.store.sqlite import retention as retention_sql
from harvest_engine.store.sqlite import schedules as schedule_sql
from harvest_engine.store.sqlite import workflow_logs
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence
    from datetime import datetime

    from harvest_engine.store.operations import ScheduleRow
    from harvest_engine.store.rows import LedgerEntry
    from harvest_engine.store.sqlite.run_cache import RunCache


class SideTables:
    """WriteTxn methods on the tables a decision seldom touches."""

    _conn: sqlite3.Connection
    _runs: RunCache

    # -- the LLM ledger ------------------------------------------------------

    def add_ledger(self, entries: Sequence[LedgerEntry]) -> None:
        if not entries:
            return
        self._conn.executemany(
            "INSERT INTO harvest_llm_ledger (exec_id, activity, attempt, model, input_tokens, "
            "output_tokens, latency, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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

    # -- logs ---------------------------------------------------------------

    def append_log_lines(
        self,
        exec_id: str,
        lines: Sequence[tuple[int, datetime, str]],
        max_lines: int | None,
    ) -> None:
        workflow_logs.append(self._conn, exec_id, lines, max_lines)

    # -- schedules and retention (issue 5) ------------------------------------

    def schedule(self, workflow_name: str) -> ScheduleRow | None:
        return schedule_sql.get(self._conn, workflow_name)

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
        schedule_sql.put(
            self._conn,
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
        schedule_sql.update(self._conn, workflow_name, now, **fields)

    def delete_schedule(self, workflow_name: str) -> bool:
        return schedule_sql.delete(self._conn, workflow_name)

    def active_schedule_runs(
        self, workflow_name: str, id_prefix: str, now: datetime
    ) -> int:
        return schedule_sql.active_runs(self._conn, workflow_name, id_prefix, now)

    def purge_terminal_batch(self, cutoff: datetime, limit: int) -> int:
        self._runs.clear()  # rows go without being followed one by one
        return retention_sql.purge_batch(self._conn, cutoff, limit)

    # -- client commands (serving) ------------------------------------------------

    def claim_command(self, row_id: int) -> bool:
        return command_sql.is_pending(self._conn, row_id)

    def finish_command(
        self, row_id: int, reply: str, exec_id: str | None, now: datetime
    ) -> None:
        command_sql.finish(self._conn, row_id, reply, exec_id, now)

    def purge_applied_commands(
        self, cutoff: datetime, refused_cutoff: datetime, limit: int
    ) -> int:
        return command_sql.purge_applied(self._conn, cutoff, refused_cutoff, limit)

    # -- mutexes ------------------------------------------------------------

    def enqueue_mutex(self, key: str, exec_id: str, at: datetime) -> None:
        # queued_at orders the queue; it only grows per key, so two requests
        # at one clock instant keep their arrival order.
        row = self._conn.execute(
            "SELECT MAX(queued_at) FROM harvest_mutexes WHERE key = ?", (key,)
        ).fetchone()
        queued = max(micros(at), int(row[0]) + 1 if row[0] is not None else 0)
        self._conn.execute(
            "INSERT OR IGNORE INTO harvest_mutexes (key, exec_id, queued_at) VALUES (?, ?, ?)",
            (key, exec_id, queued),
        )
        run = self._runs.get(exec_id)
        if run is not None:
            run.mutexes = True

    def grant_mutex(self, key: str, exec_id: str) -> int | None:
        conn = self._conn
        held = conn.execute(
            "SELECT 1 FROM harvest_mutexes WHERE key = ? AND granted = 1", (key,)
        ).fetchone()
        if held is not None:
            return None
        head = conn.execute(
            "SELECT exec_id FROM harvest_mutexes WHERE key = ? AND granted = 0 "
            "ORDER BY queued_at, exec_id LIMIT 1",
            (key,),
        ).fetchone()
        if head is None or head[0] != exec_id:
            return None
        meta_key = f"mutex_lock_seq:{key}"
        row = conn.execute(
            "SELECT value FROM harvest_meta WHERE key = ?", (meta_key,)
        ).fetchone()
        lock_seq = (int(row[0]) if row is not None else 0) + 1
        conn.execute(
            "INSERT OR REPLACE INTO harvest_meta (key, value) VALUES (?, ?)",
            (meta_key, str(lock_seq)),
        )
        conn.execute(
            "UPDATE harvest_mutexes SET granted = 1, lock_seq = ? WHERE key = ? AND exec_id = ?",
            (lock_seq, key, exec_id),
        )
        return lock_seq

    def release_mutex(self, key: str, exec_id: str) -> None:
        self._conn.execute(
            "DELETE FROM harvest_mutexes WHERE key = ? AND exec_id = ?", (key, exec_id)
        )
