"""When a serving worker must next wake: the earliest due time over every kind of waiting row.

The sources of the SQLite store's `wakeups`, in Postgres SQL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.store.postgres.reads import opt_time
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    import psycopg

# A RUNNING run waiting out a panic's backoff: a pass leaves it alone until
# then, unless a cancel is pending (the SQLite store's rule). One %s: now.
PANIC_BACKOFF = (
    "(panic_count > 0 AND not_before IS NOT NULL AND not_before > %s"
    " AND cancel_reason IS NULL)"
)

# The next slot of an unpaused schedule; `earliest_due` narrows it when some
# schedules' code is missing.
SCHEDULE_SOURCE = "SELECT MIN(next_fire_at) FROM harvest_schedules WHERE paused = 0"

DUE_SOURCES: tuple[str, ...] = (
    # the earliest armed timer of a run not waiting out a panic's backoff
    "SELECT MIN(fire_at) FROM harvest_timers t WHERE NOT EXISTS (SELECT 1 FROM"
    " harvest_executions e WHERE e.exec_id = t.exec_id AND "
    + PANIC_BACKOFF.replace("%s", "%(now)s")
    + ")",
    "SELECT MIN(ready_at) FROM harvest_tasks WHERE status = 'PENDING'",
    # a dead worker's task comes due when its lease expires
    "SELECT MIN(%(now)s + (EXTRACT(EPOCH FROM (lease_expires_at - clock_timestamp()))"
    " * 1000000)::bigint) FROM harvest_tasks WHERE status = 'RUNNING'",
    "SELECT MIN(deadline) FROM harvest_executions"
    " WHERE state = 'RUNNING' AND deadline IS NOT NULL",
    "SELECT MIN(CASE WHEN not_before IS NOT NULL AND cancel_reason IS NULL"
    " AND not_before > %(now)s THEN not_before ELSE %(now)s END)"
    " FROM harvest_executions WHERE needs_decision = 1 AND state = 'RUNNING'",
    SCHEDULE_SOURCE,
    "SELECT MIN(%(now)s) FROM harvest_commands WHERE applied_at IS NULL",
)


def earliest_due(
    conn: psycopg.Connection[tuple[Any, ...]],
    now: datetime,
    skip_schedules: Sequence[str] = (),
) -> datetime | None:
    """The earliest time any waiting row comes due (maybe in the past); None if none waits.

    The schedules named in `skip_schedules` do not count (their code is missing).
    """
    params: dict[str, Any] = {"now": micros(now)}
    sources = DUE_SOURCES
    if skip_schedules:
        params["skip"] = list(skip_schedules)
        skipping = f"{SCHEDULE_SOURCE} AND workflow_name <> ALL(%(skip)s)"
        sources = tuple(skipping if s == SCHEDULE_SOURCE else s for s in sources)
    sql = "SELECT LEAST(" + ", ".join(f"({source})" for source in sources) + ")"
    row = conn.execute(sql, params).fetchone()
    return opt_time(row[0] if row is not None else None)
