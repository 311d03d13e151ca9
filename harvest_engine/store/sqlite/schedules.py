"""Schedule SQL: rows of harvest_schedules, due slots, and the RUNNING runs a slot counts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.schedules import Schedule
from harvest_engine.store.operations import ScheduleRow
from harvest_engine.store.sql.columns import stored_json
from harvest_engine.store.sql.dialect import SQLITE
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    import sqlite3
    from datetime import datetime

_COLUMNS = (
    "workflow_name, spec, input, overlap, max_active_runs, next_fire_at, paused, "
    "last_fired_at, created_at, updated_at"
)
_SETTABLE = frozenset({"next_fire_at", "paused", "last_fired_at"})


def row_from(values: tuple[Any, ...]) -> ScheduleRow:
    """A ScheduleRow from a row selected with _COLUMNS; damage goes to `problem`."""
    (
        name,
        spec,
        input_,
        overlap,
        max_active,
        next_fire,
        paused,
        last,
        created,
        updated,
    ) = values
    problem: str | None = None
    schedule: Schedule | None = None
    try:
        schedule = Schedule.from_json(payloads.loads(spec))
    except (ValueError, TypeError) as exc:
        problem = f"damaged spec: {exc}"
    next_at = _time(next_fire)
    if problem is None and next_at is None:
        problem = "damaged next_fire_at"
    return ScheduleRow(
        workflow_name=name if isinstance(name, str) else str(name),
        schedule=schedule,
        input=stored_json(input_),
        overlap=overlap if isinstance(overlap, str) else "skip",
        max_active_runs=max_active if isinstance(max_active, int) else 1,
        next_fire_at=next_at,
        paused=bool(paused),
        last_fired_at=_time(last),
        created_at=_time(created),
        updated_at=_time(updated),
        problem=problem,
    )


def _time(value: Any) -> datetime | None:
    if not isinstance(value, int):
        return None
    try:
        return from_micros(value)
    except OverflowError:
        return None


def get(conn: sqlite3.Connection, workflow_name: str) -> ScheduleRow | None:
    """The schedule of a workflow, or None."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM harvest_schedules WHERE workflow_name = ?",
        (workflow_name,),
    ).fetchone()
    return None if row is None else row_from(row)


def list_all(conn: sqlite3.Connection) -> list[ScheduleRow]:
    """Every stored schedule, by workflow name."""
    with SQLITE.tolerant(conn):
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM harvest_schedules ORDER BY workflow_name"
        ).fetchall()
    return [row_from(row) for row in rows]


def due(conn: sqlite3.Connection, now: datetime) -> list[ScheduleRow]:
    """Unpaused schedules whose slot has come, plus damaged ones (they only warn)."""
    with SQLITE.tolerant(conn):
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM harvest_schedules WHERE paused = 0 AND "
            "(typeof(next_fire_at) != 'integer' OR next_fire_at <= ?) ORDER BY workflow_name",
            (micros(now),),
        ).fetchall()
    return [row_from(row) for row in rows]


def put(
    conn: sqlite3.Connection,
    *,
    workflow_name: str,
    spec: str,
    input: str,
    overlap: str,
    max_active_runs: int,
    next_fire_at: datetime,
    paused: bool,
    now: datetime,
) -> None:
    """Insert or replace a schedule row (created_at survives a replace)."""
    conn.execute(
        "INSERT INTO harvest_schedules (workflow_name, spec, input, overlap, max_active_runs, "
        "next_fire_at, paused, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (workflow_name) DO UPDATE SET spec = excluded.spec, "
        "input = excluded.input, overlap = excluded.overlap, "
        "max_active_runs = excluded.max_active_runs, next_fire_at = excluded.next_fire_at, "
        "paused = excluded.paused, updated_at = excluded.updated_at",
        (
            workflow_name,
            spec,
            input,
            overlap,
            max_active_runs,
            micros(next_fire_at),
            int(paused),
            micros(now),
            micros(now),
        ),
    )


def update(
    conn: sqlite3.Connection, workflow_name: str, now: datetime, **fields: Any
) -> None:
    """Set `next_fire_at`, `paused` and/or `last_fired_at` of a schedule."""
    unknown = set(fields) - _SETTABLE
    if unknown:
        raise ValueError(f"schedule update got unknown columns {sorted(unknown)}")
    values = [
        int(v) if k == "paused" else (None if v is None else micros(v))
        for k, v in fields.items()
    ]
    sets = ", ".join(f"{k} = ?" for k in fields)
    conn.execute(
        f"UPDATE harvest_schedules SET {sets}, updated_at = ? WHERE workflow_name = ?",
        (*values, micros(now), workflow_name),
    )


def delete(conn: sqlite3.Connection, workflow_name: str) -> bool:
    """Remove a schedule; True if there was one. Its runs keep running."""
    cursor = conn.execute(
        "DELETE FROM harvest_schedules WHERE workflow_name = ?", (workflow_name,)
    )
    return cursor.rowcount > 0


# The RUNNING runs of a schedule: its slot runs (workflow id sched:<wf>:<slot>)
# and their successors. A continue-as-new successor keeps the workflow id; a
# retry gets its own id, so walk each RUNNING run's predecessors to a slot run.
# A run past its deadline or with a pending cancel is already over (guide §7).
_ACTIVE_RUNS = """
WITH RECURSIVE chain(start, exec_id, predecessor, workflow_id, depth) AS (
    SELECT exec_id, exec_id, predecessor, workflow_id, 0 FROM harvest_executions
    WHERE state = 'RUNNING' AND workflow_name = :name
      AND (deadline IS NULL OR deadline > :now) AND cancel_reason IS NULL
    UNION ALL
    SELECT chain.start, e.exec_id, e.predecessor, e.workflow_id, chain.depth + 1
    FROM harvest_executions e JOIN chain ON e.exec_id = chain.predecessor
    WHERE substr(chain.workflow_id, 1, :plen) != :prefix AND chain.depth < 10000
)
SELECT COUNT(DISTINCT start) FROM chain WHERE substr(workflow_id, 1, :plen) = :prefix
"""


def active_runs(
    conn: sqlite3.Connection, workflow_name: str, id_prefix: str, now: datetime
) -> int:
    """How many runs of a schedule count against its `max_active_runs`."""
    row = conn.execute(
        _ACTIVE_RUNS,
        {
            "name": workflow_name,
            "now": micros(now),
            "plen": len(id_prefix),
            "prefix": id_prefix,
        },
    ).fetchone()
    return int(row[0])
