"""Schedule SQL of either store: rows, due slots, and the RUNNING runs a slot counts.

On Postgres a firing transaction reads its schedule row FOR UPDATE, so when
several workers find one slot due, the first moves the slot and the others
then see it moved: a slot fires once across all workers. On SQLite the
writer holds the file, and a damaged row (a foreign writer) reads with its
damage in `ScheduleRow.problem` instead of failing the read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.schedules import Schedule
from harvest_engine.store.operations import ScheduleRow
from harvest_engine.store.sql.columns import stored_json
from harvest_engine.store.sql.dialect import POSTGRES, SQLITE, Dialect
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.store.sql.executes import Executes

_COLUMNS = (
    "workflow_name, spec, input, overlap, max_active_runs, next_fire_at, paused, "
    "last_fired_at, created_at, updated_at"
)
_SETTABLE = frozenset({"next_fire_at", "paused", "last_fired_at"})

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
    WHERE {chain_prefix} != :prefix AND chain.depth < 10000
)
SELECT COUNT(DISTINCT start) FROM chain WHERE {prefix} = :prefix
"""


class Schedules:
    """The schedule statements in one dialect, rendered once when built."""

    def __init__(self, dialect: Dialect) -> None:
        r = dialect.render
        self._dialect = dialect
        self._get = r(
            f"SELECT {_COLUMNS} FROM harvest_schedules WHERE workflow_name = ?"
        )
        self._get_locked = self._get + dialect.for_update
        self._list = f"SELECT {_COLUMNS} FROM harvest_schedules ORDER BY workflow_name"
        not_whole = dialect.not_whole.format(column="next_fire_at")
        self._due = r(
            f"SELECT {_COLUMNS} FROM harvest_schedules WHERE paused = 0 AND "
            f"({not_whole} OR next_fire_at <= ?) ORDER BY workflow_name"
        )
        self._put = r(
            "INSERT INTO harvest_schedules (workflow_name, spec, input, overlap, "
            "max_active_runs, next_fire_at, paused, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (workflow_name) DO UPDATE SET spec = excluded.spec, "
            "input = excluded.input, overlap = excluded.overlap, "
            "max_active_runs = excluded.max_active_runs, "
            "next_fire_at = excluded.next_fire_at, "
            "paused = excluded.paused, updated_at = excluded.updated_at"
        )
        self._delete = r("DELETE FROM harvest_schedules WHERE workflow_name = ?")
        self._active_runs = r(
            _ACTIVE_RUNS.format(
                chain_prefix=dialect.prefix.format(
                    column="chain.workflow_id", n=":plen"
                ),
                prefix=dialect.prefix.format(column="workflow_id", n=":plen"),
            )
        )

    def get(
        self, conn: Executes, workflow_name: str, *, lock: bool = False
    ) -> ScheduleRow | None:
        """The schedule of a workflow, or None; with `lock`, held until the transaction ends."""
        sql = self._get_locked if lock else self._get
        row = conn.execute(sql, (workflow_name,)).fetchone()
        return None if row is None else row_from(row)

    def list_all(self, conn: Executes) -> list[ScheduleRow]:
        """Every stored schedule, by workflow name."""
        with self._dialect.tolerant(conn):
            rows = conn.execute(self._list).fetchall()
        return [row_from(row) for row in rows]

    def due(self, conn: Executes, now: datetime) -> list[ScheduleRow]:
        """Unpaused schedules whose slot has come, plus damaged ones (they only warn)."""
        with self._dialect.tolerant(conn):
            rows = conn.execute(self._due, (micros(now),)).fetchall()
        return [row_from(row) for row in rows]

    def put(
        self,
        conn: Executes,
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
            self._put,
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
        self, conn: Executes, workflow_name: str, now: datetime, **fields: Any
    ) -> None:
        """Set `next_fire_at`, `paused` and/or `last_fired_at` of a schedule."""
        unknown = set(fields) - _SETTABLE
        if unknown:
            raise ValueError(f"schedule update got unknown columns {sorted(unknown)}")
        values = [
            int(v) if k == "paused" else (None if v is None else micros(v))
            for k, v in fields.items()
        ]
        mark = self._dialect.mark
        sets = ", ".join(f"{k} = {mark}" for k in fields)
        conn.execute(
            f"UPDATE harvest_schedules SET {sets}, updated_at = {mark} "
            f"WHERE workflow_name = {mark}",
            (*values, micros(now), workflow_name),
        )

    def delete(self, conn: Executes, workflow_name: str) -> bool:
        """Remove a schedule; True if there was one. Its runs keep running."""
        cursor = self._dialect.settled(conn, self._delete, (workflow_name,))
        return bool(cursor.rowcount > 0)

    def active_runs(
        self, conn: Executes, workflow_name: str, id_prefix: str, now: datetime
    ) -> int:
        """How many runs of a schedule count against its `max_active_runs`."""
        row = conn.execute(
            self._active_runs,
            {
                "name": workflow_name,
                "now": micros(now),
                "plen": len(id_prefix),
                "prefix": id_prefix,
            },
        ).fetchone()
        return int(row[0]) if row is not None else 0


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


SQLITE_SCHEDULES = Schedules(SQLITE)
POSTGRES_SCHEDULES = Schedules(POSTGRES)
