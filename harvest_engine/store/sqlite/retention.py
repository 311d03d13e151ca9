"""Retention SQL: one purge batch of terminal runs closed before a cutoff, all their rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    import sqlite3
    from datetime import datetime

PURGE_BATCH = 256

# Seeks on harvest_executions_closed; a damaged closed_at (not an integer) is
# skipped, since SQLite orders every TEXT or BLOB after every INTEGER (guide §7).
SELECT_BATCH = (
    "SELECT exec_id FROM harvest_executions INDEXED BY harvest_executions_closed "
    "WHERE closed_at IS NOT NULL AND closed_at < ? AND state != 'RUNNING' "
    "ORDER BY closed_at LIMIT ?"
)

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
    "harvest_executions",
)


def purge_batch(
    conn: sqlite3.Connection, cutoff: datetime, limit: int = PURGE_BATCH
) -> int:
    """Delete up to `limit` terminal runs closed before `cutoff`; the caller holds the transaction.

    Returns:
        How many runs were removed.
    """
    ids = [row[0] for row in conn.execute(SELECT_BATCH, (micros(cutoff), limit))]
    if not ids:
        return 0
    marks = ", ".join("?" * len(ids))
    for table in RUN_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE exec_id IN ({marks})", ids)
    return len(ids)
