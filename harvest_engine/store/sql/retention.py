"""Retention SQL of either store: one purge batch of terminal runs closed before a cutoff, all their rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.store.sql.dialect import POSTGRES, SQLITE, Dialect
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.store.sql.executes import Executes

# Every table that holds rows of a run, each with an index led by exec_id.
RUN_TABLES = (
    "harvest_events",
    "harvest_tasks",
    "harvest_timers",
    "harvest_signals",
    "harvest_activity_attempts",
    "harvest_workflow_logs",
    "harvest_llm_ledger",
    "harvest_mutexes",
    "harvest_commands",
    "harvest_headers",
    "harvest_run_watchers",
    "harvest_run_events",
    "harvest_streams",
    "harvest_executions",
)


class Retention:
    """The purge statements in one dialect, rendered once when built."""

    def __init__(self, dialect: Dialect) -> None:
        self._dialect = dialect
        # Seeks on harvest_executions_closed. On SQLite a damaged closed_at
        # (not an integer) is skipped, since SQLite orders every TEXT or BLOB
        # after every INTEGER (guide §7); on Postgres the runs are locked
        # (SKIP LOCKED: a run another worker holds waits for the next batch),
        # so a purge never races a decision of the same run.
        self.select_batch = dialect.render(
            "SELECT exec_id FROM harvest_executions"
            + dialect.indexed_by.format(index="harvest_executions_closed")
            + " WHERE closed_at IS NOT NULL AND closed_at < ? AND state != 'RUNNING' "
            "ORDER BY closed_at LIMIT ?" + dialect.skip_locked
        )

    def purge_batch(self, conn: Executes, cutoff: datetime, limit: int) -> int:
        """Delete up to `limit` terminal runs closed before `cutoff`; the caller holds the transaction.

        Returns:
            How many runs were removed.
        """
        ids = [
            row[0]
            for row in conn.execute(
                self.select_batch, (micros(cutoff), limit)
            ).fetchall()
        ]
        if not ids:
            return 0
        which, args = self._dialect.in_list(ids)
        for table in RUN_TABLES:
            conn.execute(f"DELETE FROM {table} WHERE exec_id {which}", args)
        return len(ids)


SQLITE_RETENTION = Retention(SQLITE)
POSTGRES_RETENTION = Retention(POSTGRES)
