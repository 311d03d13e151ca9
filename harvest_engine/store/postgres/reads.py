"""Read SQL of the Postgres store, with the SQLite store's row converters (the same columns).

Used by the store outside transactions, by its write transactions, and by
`PostgresReader`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.events import HistoryEvent
from harvest_engine.store.operations import LedgerTotals
from harvest_engine.store.records import ExecutionDetail, StagedSignal
from harvest_engine.store.side_reads import SideTableReads
from harvest_engine.store.sqlite.queries import (
    EXECUTION_COLUMNS,
    TASK_COLUMNS,
    detail_from_row,
    execution_from_row,
    opt_time,
    stored_json,
    task_from_row,
)
from harvest_engine.timestamps import from_micros

if TYPE_CHECKING:
    import psycopg

    from harvest_engine.store.rows import ExecutionRecord, TaskRecord


# The reads both stores run alike (side_reads.py), with psycopg's parameter mark.
_SHARED = SideTableReads("%s")
activity_attempts = _SHARED.activity_attempts
pending_tasks = _SHARED.pending_tasks
timers = _SHARED.timers
mutexes = _SHARED.mutexes
llm_ledger = _SHARED.llm_ledger
workflow_logs = _SHARED.workflow_logs

__all__ = [
    "EXECUTION_COLUMNS",
    "TASK_COLUMNS",
    "activity_attempts",
    "describe",
    "execution",
    "execution_from_row",
    "llm_ledger",
    "llm_totals",
    "load_events",
    "mutexes",
    "opt_time",
    "pending_tasks",
    "staged_signals",
    "task",
    "task_from_row",
    "timers",
    "workflow_logs",
]


def execution(
    conn: psycopg.Connection[tuple[Any, ...]], exec_id: str, *, lock: bool = False
) -> ExecutionRecord | None:
    """One run's row; with `lock`, locked until the transaction ends (FOR UPDATE)."""
    row = conn.execute(
        f"SELECT {EXECUTION_COLUMNS} FROM harvest_executions WHERE exec_id = %s"
        + (" FOR UPDATE" if lock else ""),
        (exec_id,),
    ).fetchone()
    return None if row is None else execution_from_row(row)


def task(conn: psycopg.Connection[tuple[Any, ...]], task_id: int) -> TaskRecord | None:
    """A task row by id."""
    row = conn.execute(
        f"SELECT {TASK_COLUMNS} FROM harvest_tasks WHERE id = %s", (task_id,)
    ).fetchone()
    return None if row is None else task_from_row(row)


def load_events(
    conn: psycopg.Connection[tuple[Any, ...]], exec_id: str, after_seq: int = 0
) -> list[HistoryEvent]:
    """A run's events after `after_seq`, in order."""
    rows = conn.execute(
        "SELECT seq, type, at, attrs FROM harvest_events WHERE exec_id = %s AND seq > %s "
        "ORDER BY seq",
        (exec_id, after_seq),
    ).fetchall()
    return [
        HistoryEvent(
            seq=seq, type=type_, at=from_micros(at), attrs=payloads.loads(attrs)
        )
        for seq, type_, at, attrs in rows
    ]


def staged_signals(
    conn: psycopg.Connection[tuple[Any, ...]],
    exec_id: str,
    limit: int = -1,
    max_bytes: int | None = None,
) -> list[StagedSignal]:
    """A run's undelivered signals in arrival order (see the SQLite store's twin)."""
    sql = (
        "SELECT id, name, payload, idempotency_key, received_at FROM harvest_signals "
        "WHERE exec_id = %s AND delivered = 0 ORDER BY received_at, id"
    )
    args: tuple[Any, ...] = (exec_id,)
    if limit >= 0:
        sql += " LIMIT %s"
        args += (limit,)
    rows: list[tuple[Any, ...]] = []
    loaded = 0
    for r in conn.execute(sql, args):
        rows.append(r)
        loaded += len(r[2]) if isinstance(r[2], str) else 0
        if max_bytes is not None and loaded >= max_bytes:
            break
    return [
        StagedSignal(
            signal_id=r[0],
            name=r[1],
            payload=stored_json(r[2]),
            idempotency_key=r[3],
            received_at=from_micros(r[4]),
        )
        for r in rows
    ]


def llm_totals(conn: psycopg.Connection[tuple[Any, ...]], exec_id: str) -> LedgerTotals:
    """A run's ledger rows summed."""
    row = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
        "COALESCE(SUM(latency), 0.0) FROM harvest_llm_ledger WHERE exec_id = %s",
        (exec_id,),
    ).fetchone() or (0, 0, 0, 0.0)
    return LedgerTotals(
        calls=int(row[0]),
        input_tokens=int(row[1]),
        output_tokens=int(row[2]),
        latency=float(row[3]),
    )


def describe(
    conn: psycopg.Connection[tuple[Any, ...]], exec_id: str
) -> ExecutionDetail | None:
    """One run with payloads as Stored values."""
    row = conn.execute(
        f"SELECT {EXECUTION_COLUMNS} FROM harvest_executions WHERE exec_id = %s",
        (exec_id,),
    ).fetchone()
    return None if row is None else detail_from_row(row)
