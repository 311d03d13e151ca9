"""When the serving loop must next wake: the earliest due time over every kind of waiting row.

Each source is one indexed read (the worker sleeps
precisely). A new kind of deferred work (a backoff column, a new table)
adds one entry to `DUE_SOURCES`; the serving loop needs no change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.store.sqlite.queries import opt_time
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence
    from datetime import datetime

# A RUNNING run waiting out a panic's backoff (decide.py, runtime/deciding/panics.py):
# a pass leaves it alone until then, unless a cancel is pending. One `?`: now.
PANIC_BACKOFF = (
    "(panic_count > 0 AND not_before IS NOT NULL AND not_before > ?"
    " AND cancel_reason IS NULL)"
)

# The next slot of an unpaused schedule (a damaged slot is skipped: it only
# warns); `earliest_due` narrows it when some schedules' code is missing.
SCHEDULE_SOURCE = (
    "SELECT MIN(next_fire_at) FROM harvest_schedules"
    " WHERE paused = 0 AND typeof(next_fire_at) = 'integer'"
)

# Each source selects one nullable time (microseconds); `:now` is bound to the
# caller's now, so work that is ready at once reads as due now.
DUE_SOURCES: tuple[str, ...] = (
    # the earliest armed timer of a run not waiting out a panic's backoff
    # (the decision source below has that run's not-before time)
    "SELECT fire_at FROM harvest_timers t WHERE NOT EXISTS (SELECT 1 FROM"
    " harvest_executions e WHERE e.exec_id = t.exec_id AND "
    + PANIC_BACKOFF.replace("?", ":now")
    + ") ORDER BY fire_at LIMIT 1",
    # an activity task waiting for its retry backoff (or ready now)
    "SELECT MIN(ready_at) FROM harvest_tasks WHERE status = 'PENDING'",
    # an execution deadline (the run times out then)
    "SELECT MIN(deadline) FROM harvest_executions"
    " WHERE state = 'RUNNING' AND deadline IS NOT NULL",
    # a run flagged for a decision: now, or its not-before time (a retry's
    # backoff; a pending cancel skips it, as the decider does)
    "SELECT MIN(CASE WHEN not_before IS NOT NULL AND cancel_reason IS NULL"
    " AND not_before > :now THEN not_before ELSE :now END)"
    " FROM harvest_executions WHERE needs_decision = 1 AND state = 'RUNNING'",
    SCHEDULE_SOURCE,
    # a client command waiting to be applied: now
    "SELECT MIN(:now) FROM harvest_commands WHERE applied_at IS NULL",
)


def earliest_due(
    conn: sqlite3.Connection,
    now: datetime,
    extra: tuple[str, ...] = (),
    skip_schedules: Sequence[str] = (),
) -> datetime | None:
    """The earliest time any waiting row comes due (maybe in the past); None if none waits.

    The schedules named in `skip_schedules` do not count (their code is missing).
    """
    params: dict[str, object] = {"now": micros(now)}
    sources = DUE_SOURCES + extra
    if skip_schedules:
        marks = [f":skip{i}" for i in range(len(skip_schedules))]
        params.update(zip((m[1:] for m in marks), skip_schedules, strict=True))
        skipping = f"{SCHEDULE_SOURCE} AND workflow_name NOT IN ({', '.join(marks)})"
        sources = tuple(skipping if s == SCHEDULE_SOURCE else s for s in sources)
    sql = (
        "SELECT MIN(t) FROM ("
        + " UNION ALL ".join(f"SELECT ({source}) AS t" for source in sources)
        + ")"
    )
    row = conn.execute(sql, params).fetchone()
    return opt_time(row[0])
