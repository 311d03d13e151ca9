"""Retention SQL of the Postgres store: one purge batch of terminal runs closed before a cutoff."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.store.sqlite.retention import RUN_TABLES
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from datetime import datetime

    import psycopg


def purge_batch(
    conn: psycopg.Connection[tuple[Any, ...]], cutoff: datetime, limit: int
) -> int:
    """Delete up to `limit` terminal runs closed before `cutoff`, with every row they own.

    The runs are locked (SKIP LOCKED: a run another worker holds waits for
    the next batch), so a purge never races a decision of the same run.
    """
    ids = [
        row[0]
        for row in conn.execute(
            "SELECT exec_id FROM harvest_executions WHERE closed_at IS NOT NULL "
            "AND closed_at < %s AND state != 'RUNNING' ORDER BY closed_at LIMIT %s "
            "FOR UPDATE SKIP LOCKED",
            (micros(cutoff), limit),
        ).fetchall()
    ]
    if not ids:
        return 0
    for table in RUN_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE exec_id = ANY(%s)", (ids,))
    return len(ids)
