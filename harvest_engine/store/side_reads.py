"""The per-run reads of the side tables that both stores run alike: attempts, tasks, timers, mutexes, ledger, logs.

SQLite and Postgres hold these tables with the same columns and differ here
only in the parameter mark (`?` or `%s`), so each store binds one
`SideTableReads` to its mark (sqlite/run_reads.py, postgres/reads.py) and
the SQL and row conversions live once. Staged signals stay per store: their
limit and byte budget are read differently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from harvest_engine.states import ExecutionId
from harvest_engine.store.records import (
    ActivityAttempt,
    LedgerRow,
    LogLine,
    MutexRow,
    PendingTask,
    TimerRow,
)
from harvest_engine.store.rows import UnreadableRow
from harvest_engine.store.sqlite.queries import (
    TASK_COLUMNS,
    error_info,
    opt_time,
    stored_json,
    task_from_row,
)
from harvest_engine.timestamps import from_micros

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime


def _whole(value: Any, what: str) -> int:
    """A stored whole number, or UnreadableRow naming the column."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise UnreadableRow(f"{what} holds {value!r}, not a whole number")


def _opt_whole(value: Any, what: str) -> int | None:
    return None if value is None else _whole(value, what)


def _opt_number(value: Any, what: str) -> float | None:
    if value is None or (
        isinstance(value, int | float) and not isinstance(value, bool)
    ):
        return value
    raise UnreadableRow(f"{what} holds {value!r}, not a number")


def _at(value: Any, what: str) -> datetime:
    """A stored time (micros) as a datetime, or UnreadableRow."""
    try:
        return from_micros(_whole(value, what))
    except OverflowError as exc:
        raise UnreadableRow(f"{what} holds {value!r}, out of range") from exc


class Rows(Protocol):
    """What a read needs of a cursor: every row."""

    def fetchall(self) -> Sequence[Any]:
        """Every row left, as tuples of column values."""
        ...


class Executes(Protocol):
    """What a read needs of a connection (sqlite3's and psycopg's both have it)."""

    def execute(self, sql: Any, params: Any, /) -> Rows:
        """Run one statement with its parameters."""
        ...


class SideTableReads:
    """The side-table reads of one store, written with its parameter mark."""

    def __init__(self, mark: str) -> None:
        self._mark = mark

    def activity_attempts(
        self, conn: Executes, exec_id: str, name: str | None
    ) -> list[ActivityAttempt]:
        """Finished attempts of a run (one activity name, or all), in order."""
        sql = (
            "SELECT activity_id, activity_name, attempt, started_at, ended_at, outcome, "
            f"error FROM harvest_activity_attempts WHERE exec_id = {self._mark}"
        )
        args: tuple[str, ...] = (exec_id,)
        if name is not None:
            sql += f" AND activity_name = {self._mark}"
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

    def pending_tasks(self, conn: Executes, exec_id: str) -> list[PendingTask]:
        """A run's unfinished activity tasks."""
        rows = conn.execute(
            f"SELECT {TASK_COLUMNS} FROM harvest_tasks WHERE exec_id = {self._mark} "
            "ORDER BY id",
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

    def timers(self, conn: Executes, exec_id: str) -> list[TimerRow]:
        """A run's unfired timers, soonest first."""
        rows = conn.execute(
            f"SELECT timer_id, fire_at FROM harvest_timers WHERE exec_id = {self._mark} "
            "ORDER BY fire_at, timer_id",
            (exec_id,),
        ).fetchall()
        return [
            TimerRow(timer_id=r[0], fire_at=_at(r[1], "a timer's fire_at"))
            for r in rows
        ]

    def mutexes(self, conn: Executes, exec_id: str) -> list[MutexRow]:
        """Mutex places a run holds or waits for."""
        # A waiter's place: the holder plus the waiters queued before it, in
        # the order grant_mutex serves them (queued_at, then exec_id).
        rows = conn.execute(
            "SELECT m.key, m.exec_id, m.granted, m.lock_seq, m.queued_at, "
            "CASE WHEN m.granted = 1 THEN 0 ELSE ("
            " SELECT COUNT(*) FROM harvest_mutexes o WHERE o.key = m.key AND ("
            "  o.granted = 1 OR (o.granted = 0 AND (o.queued_at < m.queued_at OR"
            "   (o.queued_at = m.queued_at AND o.exec_id < m.exec_id))))) END "
            f"FROM harvest_mutexes m WHERE m.exec_id = {self._mark} ORDER BY m.key",
            (exec_id,),
        ).fetchall()
        return [
            MutexRow(
                key=r[0],
                exec_id=ExecutionId(r[1]),
                granted=bool(r[2]),
                lock_seq=_opt_whole(r[3], "a mutex row's lock_seq"),
                queued_at=_at(r[4], "a mutex row's queued_at"),
                ahead=_whole(r[5], "a mutex row's place"),
            )
            for r in rows
        ]

    def llm_ledger(self, conn: Executes, exec_id: str) -> list[LedgerRow]:
        """A run's LLM calls in recording order."""
        rows = conn.execute(
            "SELECT activity, attempt, model, input_tokens, output_tokens, latency, "
            f"recorded_at FROM harvest_llm_ledger WHERE exec_id = {self._mark} ORDER BY id",
            (exec_id,),
        ).fetchall()
        return [
            LedgerRow(
                activity=r[0],
                attempt=_whole(r[1], "a ledger row's attempt"),
                model=r[2],
                input_tokens=_whole(r[3], "a ledger row's input_tokens"),
                output_tokens=_whole(r[4], "a ledger row's output_tokens"),
                latency=_opt_number(r[5], "a ledger row's latency"),
                recorded_at=_at(r[6], "a ledger row's recorded_at"),
            )
            for r in rows
        ]

    def workflow_logs(self, conn: Executes, exec_id: str) -> list[LogLine]:
        """A run's workflow log lines, marker included."""
        rows = conn.execute(
            "SELECT seq, at, message, marker FROM harvest_workflow_logs "
            f"WHERE exec_id = {self._mark} ORDER BY seq",
            (exec_id,),
        ).fetchall()
        return [
            LogLine(
                seq=r[0],
                at=_at(r[1], "a log line's at"),
                message=r[2],
                marker=bool(r[3]),
            )
            for r in rows
        ]
