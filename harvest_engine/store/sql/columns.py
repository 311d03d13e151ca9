"""The columns both stores select, and their rows as records: one converter per record type.

Readers tolerate damaged rows: payload columns become `Stored` values (a
file any process can write may hold anything), and the time columns are
integers of microseconds on both stores.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.states import ErrorInfo, ExecutionId
from harvest_engine.store.records import ExecutionDetail, Stored
from harvest_engine.store.rows import ExecutionRecord, TaskRecord, UnreadableRow
from harvest_engine.store.sql.dialect import BadText
from harvest_engine.timestamps import from_micros

if TYPE_CHECKING:
    from datetime import datetime

__all__ = [
    "EXECUTION_COLUMNS",
    "LABEL_COLUMNS",
    "TASK_COLUMNS",
    "BadText",
    "detail_from_row",
    "error_info",
    "execution_from_row",
    "opt_number",
    "opt_time",
    "opt_whole",
    "stored_json",
    "stored_object",
    "task_from_row",
    "time_at",
    "whole",
]

EXECUTION_COLUMNS = (
    "id, exec_id, workflow_name, workflow_id, state, attempt, input, output, error, "
    "parent_exec_id, parent_close_policy, predecessor, successor, started_at, closed_at, "
    "deadline, retry_policy, cancel_reason, cancel_seq, not_before, next_seq, "
    "history_bytes, panic_count, memo, search_attributes, pause_reason, "
    "reset_from, reset_to, forked_from"
)

TASK_COLUMNS = (
    "id, exec_id, activity_id, activity_name, input, queue, status, attempt, max_attempts, "
    "ready_at, scheduled_at, heartbeat, last_error, retry_policy, start_to_close, "
    "schedule_to_close_at, idempotency_key, local"
)


def opt_time(value: Any) -> datetime | None:
    """An optional stored time column as an aware datetime."""
    return None if value is None else from_micros(int(value))


def whole(value: Any, what: str) -> int:
    """A stored whole number, or `UnreadableRow` naming the column (`what`)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise UnreadableRow(f"{what} holds {value!r}, not a whole number")


def opt_whole(value: Any, what: str) -> int | None:
    """`whole`, or None for NULL."""
    return None if value is None else whole(value, what)


def opt_number(value: Any, what: str) -> float | None:
    """A stored number or NULL, or `UnreadableRow` naming the column."""
    if value is None or (
        isinstance(value, int | float) and not isinstance(value, bool)
    ):
        return value
    raise UnreadableRow(f"{what} holds {value!r}, not a number")


def time_at(value: Any, what: str) -> datetime:
    """A stored time (micros) as a datetime, or `UnreadableRow` naming the column.

    For the side tables a reader shows: SQLite keeps any value in any
    column, so a hand-edited file may hold text where harvest wrote a time.
    """
    try:
        return from_micros(whole(value, what))
    except OverflowError as exc:
        raise UnreadableRow(f"{what} holds {value!r}, out of range") from exc


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


def execution_from_row(row: tuple[Any, ...]) -> ExecutionRecord:
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
        pause_reason=row[25],
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


def error_info(text: Any) -> ErrorInfo | None:
    """A stored error column as ErrorInfo; None when empty, "Unreadable" when it does not parse."""
    if text is None:
        return None
    try:
        return ErrorInfo.from_json(payloads.loads(text))
    except (ValueError, TypeError):
        return ErrorInfo(type="Unreadable", message=str(text))


# What a describe selects after EXECUTION_COLUMNS: the run's labels (schema v5).
LABEL_COLUMNS = "summary, details, current_details"


def detail_from_row(row: tuple[Any, ...]) -> ExecutionDetail:
    """An ExecutionDetail from a row selected with EXECUTION_COLUMNS, then LABEL_COLUMNS."""
    labels = row[29:32] if len(row) >= 32 else (None, None, None)
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
        paused=row[25] is not None and row[4] == "RUNNING",
        pause_reason=row[25] if row[4] == "RUNNING" else None,
        reset_from=ExecutionId(row[26]) if row[26] else None,
        reset_to=ExecutionId(row[27]) if row[27] else None,
        forked_from=ExecutionId(row[28]) if row[28] else None,
        summary=_label(labels[0]),
        details=_label(labels[1]),
        current_details=_label(labels[2]),
    )


def _label(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _safe_time(value: object) -> datetime | None:
    return from_micros(value) if isinstance(value, int) else None
