"""Schedule SQL of the Postgres store: rows (locked in a firing transaction), due slots, active runs.

A firing transaction reads its schedule row FOR UPDATE, so when several
workers find one slot due, the first moves the slot and the others then see
it moved: a slot fires once across all workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.store.sqlite.schedules import row_from
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from datetime import datetime

    import psycopg

    from harvest_engine.store.operations import ScheduleRow

_COLUMNS = (
    "workflow_name, spec, input, overlap, max_active_runs, next_fire_at, paused, "
    "last_fired_at, created_at, updated_at"
)
_SETTABLE = frozenset({"next_fire_at", "paused", "last_fired_at"})


def get(
    conn: psycopg.Connection[tuple[Any, ...]], workflow_name: str, *, lock: bool
) -> ScheduleRow | None:
    """The schedule of a workflow, or None; with `lock`, held until the transaction ends."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM harvest_schedules WHERE workflow_name = %s"
        + (" FOR UPDATE" if lock else ""),
        (workflow_name,),
    ).fetchone()
    return None if row is None else row_from(row)


def list_all(conn: psycopg.Connection[tuple[Any, ...]]) -> list[ScheduleRow]:
    """Every stored schedule, by workflow name."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM harvest_schedules ORDER BY workflow_name"
    ).fetchall()
    return [row_from(row) for row in rows]


def due(conn: psycopg.Connection[tuple[Any, ...]], now: datetime) -> list[ScheduleRow]:
    """Unpaused schedules whose slot has come, plus rows without a slot (they only warn)."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM harvest_schedules WHERE paused = 0 AND "
        "(next_fire_at IS NULL OR next_fire_at <= %s) ORDER BY workflow_name",
        (micros(now),),
    ).fetchall()
    return [row_from(row) for row in rows]


def put(
    conn: psycopg.Connection[tuple[Any, ...]],
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
        "next_fire_at, paused, created_at, updated_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
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
    conn: psycopg.Connection[tuple[Any, ...]],
    workflow_name: str,
    now: datetime,
    **fields: Any,
) -> None:
    """Set `next_fire_at`, `paused` and/or `last_fired_at` of a schedule."""
    unknown = set(fields) - _SETTABLE
    if unknown:
        raise ValueError(f"schedule update got unknown columns {sorted(unknown)}")
    values = [
        int(v) if k == "paused" else (None if v is None else micros(v))
        for k, v in fields.items()
    ]
    sets = ", ".join(f"{k} = %s" for k in fields)
    conn.execute(
        f"UPDATE harvest_schedules SET {sets}, updated_at = %s WHERE workflow_name = %s",
        (*values, micros(now), workflow_name),
    )


def delete(conn: psycopg.Connection[tuple[Any, ...]], workflow_name: str) -> bool:
    """Remove a schedule; True if there was one. Its runs keep running."""
    # Imported here: the reader imports this module, and `import harvest_engine`
    # must work without psycopg (the `postgres` extra), which pipelined needs.
    from harvest_engine.store.postgres import pipelined  # noqa: PLC0415

    # Settled: in a pipelined transaction the count is known only once answered.
    cursor = pipelined.settled(
        conn, "DELETE FROM harvest_schedules WHERE workflow_name = %s", (workflow_name,)
    )
    return cursor.rowcount > 0


# The RUNNING runs of a schedule and their successors (the SQLite store's query).
_ACTIVE_RUNS = """
WITH RECURSIVE chain(start, exec_id, predecessor, workflow_id, depth) AS (
    SELECT exec_id, exec_id, predecessor, workflow_id, 0 FROM harvest_executions
    WHERE state = 'RUNNING' AND workflow_name = %(name)s
      AND (deadline IS NULL OR deadline > %(now)s) AND cancel_reason IS NULL
    UNION ALL
    SELECT chain.start, e.exec_id, e.predecessor, e.workflow_id, chain.depth + 1
    FROM harvest_executions e JOIN chain ON e.exec_id = chain.predecessor
    WHERE left(chain.workflow_id, %(plen)s) != %(prefix)s AND chain.depth < 10000
)
SELECT COUNT(DISTINCT start) FROM chain WHERE left(workflow_id, %(plen)s) = %(prefix)s
"""


def active_runs(
    conn: psycopg.Connection[tuple[Any, ...]],
    workflow_name: str,
    id_prefix: str,
    now: datetime,
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
    return int(row[0]) if row is not None else 0
