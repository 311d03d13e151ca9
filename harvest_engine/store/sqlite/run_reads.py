"""The per-run reads of the side tables: attempts, pending tasks, timers, staged signals, mutexes, ledger, logs.

Shared by the writer's store and the read-only reader, like `queries`,
whose row conversions they use; damaged payloads read as `Stored` values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.store.records import StagedSignal
from harvest_engine.store.side_reads import SideTableReads
from harvest_engine.store.sqlite.queries import stored_json
from harvest_engine.timestamps import from_micros

if TYPE_CHECKING:
    import sqlite3

# The reads both stores run alike (side_reads.py), with SQLite's parameter mark.
_SHARED = SideTableReads("?")
activity_attempts = _SHARED.activity_attempts
pending_tasks = _SHARED.pending_tasks
timers = _SHARED.timers
mutexes = _SHARED.mutexes
llm_ledger = _SHARED.llm_ledger
workflow_logs = _SHARED.workflow_logs


def staged_signals(
    conn: sqlite3.Connection,
    exec_id: str,
    limit: int = -1,
    max_bytes: int | None = None,
) -> list[StagedSignal]:
    """A run's undelivered signals in arrival order.

    At most `limit` of them (-1: no limit). With `max_bytes`, the read stops
    after the signal whose stored payloads bring the total to `max_bytes`
    (at least one signal is read), so a flood of large signals is never
    loaded past a byte budget (the history caps bound the ingest).
    """
    return staged_signals_read(conn, exec_id, limit, max_bytes)[0]


def staged_signals_read(
    conn: sqlite3.Connection, exec_id: str, limit: int, max_bytes: int | None
) -> tuple[list[StagedSignal], bool]:
    """`staged_signals`, and whether they are all the run's undelivered signals."""
    cursor = conn.execute(
        "SELECT id, name, payload, idempotency_key, received_at FROM harvest_signals "
        "WHERE exec_id = ? AND delivered = 0 ORDER BY received_at, id LIMIT ?",
        (exec_id, limit),
    )
    cut = False
    if max_bytes is None:
        rows = cursor.fetchall()
    else:
        rows = []
        loaded = 0
        for r in cursor:
            rows.append(r)
            loaded += len(r[2]) if isinstance(r[2], (str, bytes)) else 0
            if loaded >= max_bytes:
                cut = True  # maybe more are staged: not known
                break
        cursor.close()
    seen_all = not cut and (limit < 0 or len(rows) < limit)
    return [
        StagedSignal(
            signal_id=r[0],
            name=r[1],
            payload=stored_json(r[2]),
            idempotency_key=r[3],
            received_at=from_micros(r[4]),
        )
        for r in rows
    ], seen_all
