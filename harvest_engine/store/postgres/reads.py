"""Read SQL of the Postgres store, with the SQLite store's row converters (the same columns).

Used by the store outside transactions, by its write transactions, and by
`PostgresReader`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.events import HistoryEvent
from harvest_engine.states import ExecutionId
from harvest_engine.store.operations import LedgerTotals
from harvest_engine.store.records import (
    ActivityAttempt,
    ExecutionDetail,
    LedgerRow,
    LogLine,
    MutexRow,
    PendingTask,
    StagedSignal,
    TimerRow,
)
from harvest_engine.store.sqlite.queries import (
    EXECUTION_COLUMNS,
    TASK_COLUMNS,
    detail_from_row,
    error_info,
    execution_from_row,
    opt_time,
    stored_json,
    task_from_row,
)
from harvest_engine.timestamps import from_micros

if TYPE_CHECKING:
    import psycopg

    from harvest_engine.store.rows import ExecutionRecord, TaskRecord


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


def activity_attempts(
    conn: psycopg.Connection[tuple[Any, ...]], exec_id: str, name: str | None
) -> list[ActivityAttempt]:
    """Finished attempts of a run (one activity name, or all), in order."""
    sql = (
        "SELECT activity_id, activity_name, attempt, started_at, ended_at, outcome, error "
        "FROM harvest_activity_attempts WHERE exec_id = %s"
    )
    args: tuple[Any, ...] = (exec_id,)
    if name is not None:
        sql += " AND activity_name = %s"
        args += (name,)
    rows = conn.execute(sql + " ORDER BY id", args).fetchall()
    return [
        ActivityAttempt(
            activity_id=r[0],
            name=r[1],
            attempt=r[2],
            started_at=from_micros(r[3]),
            ended_at=opt_time(r[4]),
            outcome=str(r[5]).upper(),
            error=error_info(r[6]),
        )
        for r in rows
    ]


def pending_tasks(
    conn: psycopg.Connection[tuple[Any, ...]], exec_id: str
) -> list[PendingTask]:
    """A run's unfinished activity tasks."""
    rows = conn.execute(
        f"SELECT {TASK_COLUMNS} FROM harvest_tasks WHERE exec_id = %s ORDER BY id",
        (exec_id,),
    ).fetchall()
    result = []
    for row in rows:
        t = task_from_row(row)
        result.append(
            PendingTask(
                task_id=t.id,
                activity_id=t.activity_id,
                name=t.activity_name,
                status=t.status,
                attempt=t.attempt,
                max_attempts=t.max_attempts,
                ready_at=t.ready_at,
                scheduled_at=t.scheduled_at,
                last_error=error_info(t.last_error),
                input=stored_json(t.input),
            )
        )
    return result


def timers(conn: psycopg.Connection[tuple[Any, ...]], exec_id: str) -> list[TimerRow]:
    """A run's unfired timers, soonest first."""
    rows = conn.execute(
        "SELECT timer_id, fire_at FROM harvest_timers WHERE exec_id = %s "
        "ORDER BY fire_at, timer_id",
        (exec_id,),
    ).fetchall()
    return [TimerRow(timer_id=r[0], fire_at=from_micros(r[1])) for r in rows]


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


def mutexes(conn: psycopg.Connection[tuple[Any, ...]], exec_id: str) -> list[MutexRow]:
    """Mutex places a run holds or waits for."""
    # A waiter's place: the holder plus the waiters queued before it, in the
    # order grant_mutex serves them (queued_at, then exec_id).
    rows = conn.execute(
        "SELECT m.key, m.exec_id, m.granted, m.lock_seq, m.queued_at, "
        "CASE WHEN m.granted = 1 THEN 0 ELSE ("
        " SELECT COUNT(*) FROM harvest_mutexes o WHERE o.key = m.key AND ("
        "  o.granted = 1 OR (o.granted = 0 AND (o.queued_at < m.queued_at OR"
        "   (o.queued_at = m.queued_at AND o.exec_id < m.exec_id))))) END "
        "FROM harvest_mutexes m WHERE m.exec_id = %s ORDER BY m.key",
        (exec_id,),
    ).fetchall()
    return [
        MutexRow(
            key=r[0],
            exec_id=ExecutionId(r[1]),
            granted=bool(r[2]),
            lock_seq=r[3],
            queued_at=from_micros(r[4]),
            ahead=int(r[5]),
        )
        for r in rows
    ]


def llm_ledger(
    conn: psycopg.Connection[tuple[Any, ...]], exec_id: str
) -> list[LedgerRow]:
    """A run's LLM calls in recording order."""
    rows = conn.execute(
        "SELECT activity, attempt, model, input_tokens, output_tokens, latency, recorded_at "
        "FROM harvest_llm_ledger WHERE exec_id = %s ORDER BY id",
        (exec_id,),
    ).fetchall()
    return [
        LedgerRow(
            activity=r[0],
            attempt=r[1],
            model=r[2],
            input_tokens=r[3],
            output_tokens=r[4],
            latency=r[5],
            recorded_at=from_micros(r[6]),
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


def workflow_logs(
    conn: psycopg.Connection[tuple[Any, ...]], exec_id: str
) -> list[LogLine]:
    """A run's workflow log lines, marker included."""
    rows = conn.execute(
        "SELECT seq, at, message, marker FROM harvest_workflow_logs WHERE exec_id = %s "
        "ORDER BY seq",
        (exec_id,),
    ).fetchall()
    return [
        LogLine(seq=r[0], at=from_micros(r[1]), message=r[2], marker=bool(r[3]))
        for r in rows
    ]


def describe(
    conn: psycopg.Connection[tuple[Any, ...]], exec_id: str
) -> ExecutionDetail | None:
    """One run with payloads as Stored values."""
    row = conn.execute(
        f"SELECT {EXECUTION_COLUMNS} FROM harvest_executions WHERE exec_id = %s",
        (exec_id,),
    ).fetchone()
    return None if row is None else detail_from_row(row)
