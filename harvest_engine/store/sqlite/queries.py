"""Read SQL shared by the store and the reader, with row-to-record conversion.

Readers tolerate damaged rows: payload columns become `Stored` values, and a
column an older schema lacks reads as Null (the reader passes `columns`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.states import ErrorInfo, ExecutionId
from harvest_engine.store.records import (
    ActivityAttempt,
    ExecutionDetail,
    LedgerRow,
    LogLine,
    MutexRow,
    PendingTask,
    StagedSignal,
    Stored,
    TimerRow,
)
from harvest_engine.store.rows import ExecutionRecord, TaskRecord
from harvest_engine.store.sqlite import verify
from harvest_engine.timestamps import from_micros

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence
    from datetime import datetime

    from harvest_engine.events import HistoryEvent

EXECUTION_COLUMNS = (
    "id, exec_id, workflow_name, workflow_id, state, attempt, input, output, error, "
    "parent_exec_id, parent_close_policy, predecessor, successor, started_at, closed_at, "
    "deadline, retry_policy, cancel_reason, cancel_seq, not_before, next_seq, "
    "history_bytes, panic_count, memo, search_attributes"
)

TASK_COLUMNS = (
    "id, exec_id, activity_id, activity_name, input, queue, status, attempt, max_attempts, "
    "ready_at, scheduled_at, heartbeat, last_error, retry_policy, start_to_close, "
    "schedule_to_close_at, idempotency_key, local"
)


def opt_time(value: Any) -> datetime | None:
    """An optional stored time column as an aware datetime."""
    return None if value is None else from_micros(int(value))


class BadText(bytes):
    """A TEXT value whose bytes are not UTF-8, kept as bytes instead of failing the fetch."""


def stored_json(value: Any) -> Stored:
    """A JSON TEXT column as a Stored value: Null, Value, or Unreadable saying why."""
    if value is None:
        return Stored.Null()
    if isinstance(value, BadText):
        return Stored.Unreadable("text is not UTF-8")
    if not isinstance(value, str):
        kind = "BLOB" if isinstance(value, bytes) else type(value).__name__
        return Stored.Unreadable(f"stored as {kind}, expected JSON text")
    try:
        return Stored.Value(payloads.loads(value))
    except ValueError as exc:
        return Stored.Unreadable(f"not JSON: {exc}")
    except RecursionError:
        return Stored.Unreadable("nested too deep to read")


def stored_object(value: Any) -> Stored:
    """Like `stored_json`, but only a JSON object is readable (search attributes)."""
    result = stored_json(value)
    if isinstance(result, Stored.Value) and not isinstance(result.value, dict):
        return Stored.Unreadable("expected a JSON object")
    return result


def execution_from_row(row: sqlite3.Row | tuple[Any, ...]) -> ExecutionRecord:
    """Build an ExecutionRecord from a row selected with EXECUTION_COLUMNS."""
    # The time columns inline `opt_time`: every decision reads a row.
    started, closed, deadline, not_before = row[13], row[14], row[15], row[19]
    return ExecutionRecord(
        exec_id=row[1],
        workflow_name=row[2],
        workflow_id=row[3],
        state=row[4],
        attempt=row[5],
        input=row[6],
        output=row[7],
        error=row[8],
        parent_exec_id=row[9],
        parent_close_policy=row[10],
        predecessor=row[11],
        successor=row[12],
        started_at=None if started is None else from_micros(int(started)),
        closed_at=None if closed is None else from_micros(int(closed)),
        deadline=None if deadline is None else from_micros(int(deadline)),
        retry_policy=row[16],
        cancel_reason=row[17],
        cancel_seq=row[18],
        not_before=None if not_before is None else from_micros(int(not_before)),
        next_seq=row[20],
        history_bytes=row[21],
        panic_count=row[22],
        memo=row[23],
        search_attributes=row[24],
    )


def task_from_row(row: tuple[Any, ...]) -> TaskRecord:
    """Build a TaskRecord from a row selected with TASK_COLUMNS."""
    return TaskRecord(
        id=row[0],
        exec_id=row[1],
        activity_id=row[2],
        activity_name=row[3],
        input=row[4],
        queue=row[5],
        status=row[6],
        attempt=row[7],
        max_attempts=row[8],
        ready_at=from_micros(row[9]),
        scheduled_at=from_micros(row[10]),
        heartbeat=row[11],
        last_error=row[12],
        retry_policy=row[13],
        start_to_close=row[14],
        schedule_to_close_at=opt_time(row[15]),
        idempotency_key=row[16],
        local=bool(row[17]),
    )


def execution(conn: sqlite3.Connection, exec_id: str) -> ExecutionRecord | None:
    """One run's row."""
    row = conn.execute(
        f"SELECT {EXECUTION_COLUMNS} FROM harvest_executions WHERE exec_id = ?",
        (exec_id,),
    ).fetchone()
    if row is None:
        return None
    try:
        return execution_from_row(row)
    except (ValueError, TypeError, OverflowError) as exc:
        raise verify.corrupt(conn, exec_id, f"its row does not read ({exc})") from exc


def claimed_task_ids(conn: sqlite3.Connection, task_ids: Sequence[int]) -> set[int]:
    """Which of `task_ids` are RUNNING tasks (a claim not yet recorded nor dropped)."""
    found: set[int] = set()
    ids = list(task_ids)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT id FROM harvest_tasks WHERE status = 'RUNNING' AND id IN ({marks})",
            chunk,
        ).fetchall()
        found.update(r[0] for r in rows)
    return found


def exists(conn: sqlite3.Connection, exec_id: str) -> bool:
    """Whether a run with this id exists."""
    return (
        conn.execute(
            "SELECT 1 FROM harvest_executions WHERE exec_id = ?", (exec_id,)
        ).fetchone()
        is not None
    )


def load_events(
    conn: sqlite3.Connection, exec_id: str, after_seq: int = 0
) -> list[HistoryEvent]:
    """A run's events after `after_seq`, in order."""
    rows = conn.execute(
        "SELECT seq, type, at, attrs FROM harvest_events WHERE exec_id = ? AND seq > ? "
        "ORDER BY seq",
        (exec_id, after_seq),
    ).fetchall()
    return verify.events_from_rows(conn, exec_id, rows, after_seq)


def _error(text: Any) -> ErrorInfo | None:
    if text is None:
        return None
    try:
        return ErrorInfo.from_json(payloads.loads(text))
    except (ValueError, TypeError):
        return ErrorInfo(type="Unreadable", message=str(text))


def activity_attempts(
    conn: sqlite3.Connection, exec_id: str, name: str | None
) -> list[ActivityAttempt]:
    """Finished attempts of a run (one activity name, or all), in order."""
    sql = (
        "SELECT activity_id, activity_name, attempt, started_at, ended_at, outcome, error "
        "FROM harvest_activity_attempts WHERE exec_id = ?"
    )
    args: tuple[Any, ...] = (exec_id,)
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
            error=_error(r[6]),
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
                last_error=_error(task.last_error),
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


def describe(conn: sqlite3.Connection, exec_id: str) -> ExecutionDetail | None:
    """One run with payloads as Stored values; DatabaseCorrupt for a damaged run."""
    row = conn.execute(
        f"SELECT {EXECUTION_COLUMNS} FROM harvest_executions WHERE exec_id = ?",
        (exec_id,),
    ).fetchone()
    if row is None:
        return None
    verify.check_run(conn, exec_id)
    try:
        return detail_from_row(row)
    except (ValueError, TypeError, OverflowError) as exc:
        raise verify.corrupt(conn, exec_id, f"its row does not read ({exc})") from exc


def detail_from_row(row: tuple[Any, ...]) -> ExecutionDetail:
    """An ExecutionDetail from a row selected with EXECUTION_COLUMNS."""
    return ExecutionDetail(
        exec_id=ExecutionId(row[1]),
        workflow_name=row[2],
        workflow_id=row[3],
        state=row[4],
        started_at=_safe_time(row[13]),
        closed_at=_safe_time(row[14]),
        attempt=row[5] if isinstance(row[5], int) else 1,
        memo=stored_json(row[23]),
        search_attributes=stored_object(row[24]),
        cursor=row[0],
        input=stored_json(row[6]),
        output=stored_json(row[7]),
        error=stored_json(row[8]),
        parent_exec_id=ExecutionId(row[9]) if row[9] else None,
        successor=ExecutionId(row[12]) if row[12] else None,
        predecessor=ExecutionId(row[11]) if row[11] else None,
        cancel_requested=row[17],
        deadline=_safe_time(row[15]),
    )


def _safe_time(value: object) -> datetime | None:
    return from_micros(value) if isinstance(value, int) else None
