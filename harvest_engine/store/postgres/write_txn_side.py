"""The side tables of a Postgres write transaction: ledger, logs, schedules, retention, commands, mutexes.

`PostgresWriteTxn` (write_txn.py) inherits these; they need only its
connection and its advisory key locks (a mutex queue is taken by key, so
two workers are never both granted one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine.store.postgres import commands as command_sql
from harvest_engine.store.postgres import retention as retention_sql
from harvest_engine.store.postgres import schedules as schedule_sql
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from harvest_engine.store.operations import ScheduleRow
    from harvest_engine.store.postgres.txn_memory import TxnMemory
    from harvest_engine.store.rows import LedgerEntry


class SideTables:
    """WriteTxn methods on the tables a decision seldom touches."""

    memory: TxnMemory

    if TYPE_CHECKING:  # PostgresWriteTxn's, found through the class's MRO

        @property
        def _conn(self) -> psycopg.Connection[tuple[Any, ...]]: ...

    if TYPE_CHECKING:  # RowLocks', found through the class's MRO

        def _key_lock(self, *parts: str) -> None: ...

    # -- the LLM ledger ------------------------------------------------------

    def add_ledger(self, entries: Sequence[LedgerEntry]) -> None:
        if not entries:
            return
        with self._conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO harvest_llm_ledger (exec_id, activity, attempt, model, "
                "input_tokens, output_tokens, latency, recorded_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
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
        if not lines:
            return

        conn = self._conn
        try:
            with conn.transaction():  # a savepoint: a bad line never fails the decision
                row = conn.execute(
                    "SELECT COALESCE(MAX(seq), 0) FROM harvest_workflow_logs "
                    "WHERE exec_id = %s AND marker = 0",
                    (exec_id,),
                ).fetchone()
                stored = int(row[0]) if row is not None else 0
                for line_no, at, message in lines:
                    if line_no <= stored:
                        continue  # a re-run cycle emitted it again
                    if max_lines is not None and line_no > max_lines:
                        conn.execute(
                            "INSERT INTO harvest_workflow_logs (exec_id, seq, at, message, "
                            "marker) VALUES (%s, %s, %s, %s, 1) ON CONFLICT DO NOTHING",
                            (
                                exec_id,
                                max_lines + 1,
                                micros(at),
                                f"log truncated at {max_lines} lines",
                            ),
                        )
                        continue
                    conn.execute(
                        "INSERT INTO harvest_workflow_logs (exec_id, seq, at, message) "
                        "VALUES (%s, %s, %s, %s)",
                        (exec_id, line_no, micros(at), message),
                    )
        except psycopg.DataError:
            pass  # e.g. a NUL character Postgres text cannot hold: the lines are dropped

    # -- schedules and retention (issue 5) ------------------------------------

    def schedule(self, workflow_name: str) -> ScheduleRow | None:
        return schedule_sql.get(self._conn, workflow_name, lock=True)

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

    def update_schedule(
        self, workflow_name: str, now: datetime, **fields: object
    ) -> None:
        schedule_sql.update(self._conn, workflow_name, now, **fields)

    def delete_schedule(self, workflow_name: str) -> bool:
        return schedule_sql.delete(self._conn, workflow_name)

    def active_schedule_runs(
        self, workflow_name: str, id_prefix: str, now: datetime
    ) -> int:
        return schedule_sql.active_runs(self._conn, workflow_name, id_prefix, now)

    def purge_terminal_batch(self, cutoff: datetime, limit: int) -> int:
        return retention_sql.purge_batch(self._conn, cutoff, limit)

    # -- client commands (serving) ------------------------------------------------

    def claim_command(self, row_id: int) -> bool:
        row = self._conn.execute(
            "SELECT 1 FROM harvest_commands WHERE id = %s AND applied_at IS NULL "
            "FOR UPDATE SKIP LOCKED",
            (row_id,),
        ).fetchone()
        return row is not None

    def finish_command(
        self, row_id: int, reply: str, exec_id: str | None, now: datetime
    ) -> None:
        command_sql.finish(self._conn, row_id, reply, exec_id, now)

    def purge_applied_commands(
        self, cutoff: datetime, refused_cutoff: datetime, limit: int
    ) -> int:
        return command_sql.purge_applied(self._conn, cutoff, refused_cutoff, limit)

    # -- mutex queues ---------------------------------------------------------

    def enqueue_mutex(self, key: str, exec_id: str, at: datetime) -> None:
        self.memory.quiet.pop(exec_id, None)
        self._key_lock("mutex", key)
        row = self._conn.execute(
            "SELECT MAX(queued_at) FROM harvest_mutexes WHERE key = %s", (key,)
        ).fetchone()
        last = row[0] if row is not None else None
        queued = max(micros(at), int(last) + 1 if last is not None else 0)
        self._conn.execute(
            "INSERT INTO harvest_mutexes (key, exec_id, queued_at) VALUES (%s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            (key, exec_id, queued),
        )

    def grant_mutex(self, key: str, exec_id: str) -> int | None:
        self._key_lock("mutex", key)
        conn = self._conn
        held = conn.execute(
            "SELECT 1 FROM harvest_mutexes WHERE key = %s AND granted = 1", (key,)
        ).fetchone()
        if held is not None:
            return None
        head = conn.execute(
            "SELECT exec_id FROM harvest_mutexes WHERE key = %s AND granted = 0 "
            "ORDER BY queued_at, exec_id LIMIT 1",
            (key,),
        ).fetchone()
        if head is None or head[0] != exec_id:
            return None
        meta_key = f"mutex_lock_seq:{key}"
        row = conn.execute(
            "INSERT INTO harvest_meta (key, value) VALUES (%s, '1') "
            "ON CONFLICT (key) DO UPDATE SET value = "
            "(harvest_meta.value::bigint + 1)::text RETURNING value",
            (meta_key,),
        ).fetchone()
        lock_seq = int(row[0]) if row is not None else 1
        conn.execute(
            "UPDATE harvest_mutexes SET granted = 1, lock_seq = %s "
            "WHERE key = %s AND exec_id = %s",
            (lock_seq, key, exec_id),
        )
        return lock_seq

    def release_mutex(self, key: str, exec_id: str) -> None:
        self._key_lock("mutex", key)
        self._conn.execute(
            "DELETE FROM harvest_mutexes WHERE key = %s AND exec_id = %s",
            (key, exec_id),
        )
