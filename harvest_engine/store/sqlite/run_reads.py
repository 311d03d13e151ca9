"""The per-run reads of the side tables: attempts, pending tasks, timers, staged signals, mutexes, ledger, logs.

Shared by the writer's store and the read-only reader, like `queries`,
whose row conversions they use; damaged payloads read as `Stored` values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.states import ExecutionId
from harvest_engine.store.records import (
    ActivityAttempt,
    LedgerRow,
    LogLine,
    MutexRow,
    PendingTask,
    StagedSignal,
    TimerRow,
)
from harvest_engine.store.sqlite.queries import (
    TASK_COLUMNS,
    error_info,
    opt_time,
    stored_json,
    task_from_row,
)
from harvest_engine.timestamps import from_micros

if TYPE_CHECKING:
    import sqlite3


def activity_attempts(
    conn: sqlite3.Connection, exec_id: str, name: str | None
) -> list[ActivityAttempt]:
    """Finished attempts of a run (one activity name, or all), in order."""
    sql = (
        "SELECT activity_id, activity_name, attempt, started_at, ended_at, outcome, error "
        "FROM harvest_activity_attempts WHERE exec_id = ?"
    )
    args: tuple[str, ...] = (exec_id,)
    if name is not None:
        sql += " AND activity_name = ?"
        args += (name,)
    rows = conn.execute(sql + " ORDER BY id", args).fetchall()
    return [
        ActivityAttempt(
            activity_id=r[0],
            name=r[1],
            attempt=r[2],
            started_at=from_micros(r[3]),
            ended_at=opt_time(r[4]),
            # Files written before the outcomes were upper case read the same.
            outcome=str(r[5]).upper(),
            error=error_info(r[6]),
        )
        for r in rows
    ]


def pending_tasks(conn: sqlite3.Connection, exec_id: str) -> list[PendingTask]:
    """A run's unfinished activity tasks."""
    rows = conn.execute(
        f"SELECT {TASK_COLUMNS} FROM harvest_tasks WHERE exec_id = ? ORDER BY id",
        (exec_id,),
    ).fetchall()
    result = []
    for row in rows:
        task = task_from_row(row)
        result.append(
            PendingTask(
                task_id=task.id,
                activity_id=task.activity_id,
                name=task.activity_name,
                status=task.status,
                attempt=task.attempt,
                max_attempts=task.max_attempts,
                ready_at=task.ready_at,
                scheduled_at=task.scheduled_at,
                last_error=error_info(task.last_error),
                input=stored_json(task.input),
            )
        )
    return result


def timers(conn: sqlite3.Connection, exec_id: str) -> list[TimerRow]:
    """A run's unfired timers, soonest first."""
    rows = conn.execute(
        "SELECT timer_id, fire_at FROM harvest_timers WHERE exec_id = ? ORDER BY fire_at, timer_id",
        (exec_id,),
    ).fetchall()
    return [TimerRow(timer_id=r[0], fire_at=from_micros(r[1])) for r in rows]


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


def mutexes(conn: sqlite3.Connection, exec_id: str) -> list[MutexRow]:
    """Mutex places a run holds or waits for."""
    # A waiter's place: the holder plus the waiters queued before it, in the
    # order grant_mutex serves them (queued_at, then exec_id).
    rows = conn.execute(
        "SELECT m.key, m.exec_id, m.granted, m.lock_seq, m.queued_at, "
        "CASE WHEN m.granted = 1 THEN 0 ELSE ("
        " SELECT COUNT(*) FROM harvest_mutexes o WHERE o.key = m.key AND ("
        "  o.granted = 1 OR (o.granted = 0 AND (o.queued_at < m.queued_at OR"
        "   (o.queued_at = m.queued_at AND o.exec_id < m.exec_id))))) END "
        "FROM harvest_mutexes m WHERE m.exec_id = ? ORDER BY m.key",
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


def llm_ledger(conn: sqlite3.Connection, exec_id: str) -> list[LedgerRow]:
    """A run's LLM calls in recording order."""
    rows = conn.execute(
        "SELECT activity, attempt, model, input_tokens, output_tokens, latency, recorded_at "
        "FROM harvest_llm_ledger WHERE exec_id = ? ORDER BY id",
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


def workflow_logs(conn: sqlite3.Connection, exec_id: str) -> list[LogLine]:
    """A run's workflow log lines, marker included."""
    rows = conn.execute(
        "SELECT seq, at, message, marker FROM harvest_workflow_logs WHERE exec_id = ? ORDER BY seq",
        (exec_id,),
    ).fetchall()
    return [
        LogLine(seq=r[0], at=from_micros(r[1]), message=r[2], marker=bool(r[3]))
        for r in rows
    ]
