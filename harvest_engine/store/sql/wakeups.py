"""When the serving loop must next wake: the earliest due time over every kind of waiting row.

Each source is one indexed read (the worker sleeps precisely). A new kind
of deferred work (a backoff column, a new table) adds one entry to
`DUE_SOURCES`; the serving loop needs no change. A store adds sources of
its own (Postgres: a dead worker's lease) when it builds its statement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.store.sql.columns import opt_time
from harvest_engine.store.sql.shaping import HELD_DUE_SOURCE
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from harvest_engine.store.sql.dialect import Dialect
    from harvest_engine.store.sql.executes import Executes

PANIC_BACKOFF = (
    "(panic_count > 0 AND not_before IS NOT NULL AND not_before > ?"
    " AND cancel_reason IS NULL)"
)
"""A RUNNING run waiting out a panic's backoff (decide.py, runtime/panics.py): a
pass leaves it alone until then, unless a cancel is pending. One ``?``: now
(SQLite's mark; `Dialect.render` it)."""

NOT_PAUSED_TASK = (
    " AND NOT EXISTS (SELECT 1 FROM harvest_executions pe"
    " WHERE pe.exec_id = harvest_tasks.exec_id AND pe.pause_reason IS NOT NULL)"
)
"""A condition on a harvest_tasks row: its run is not paused (a paused run
starts no new attempt; runtime/repairing/pausing.py)."""

RUNS_NEEDING_DECISION = (
    "SELECT exec_id FROM harvest_executions e WHERE state = 'RUNNING'"
    " AND pause_reason IS NULL AND ("
    " needs_decision = 1"
    " OR (deadline IS NOT NULL AND deadline <= ?)"
    " OR EXISTS (SELECT 1 FROM harvest_timers t WHERE t.exec_id = e.exec_id"
    "            AND t.fire_at <= ?)"
    ") AND NOT (" + PANIC_BACKOFF + " AND (deadline IS NULL OR deadline > ?))"
    " ORDER BY id"
)
"""The RUNNING runs with work due at now (bound four times), oldest first,
unless waiting out a panic's backoff or paused (SQLite's marks; render it)."""

# Each source selects one nullable time (microseconds); `:now` is bound to the
# caller's now, so work that is ready at once reads as due now.
DUE_SOURCES: tuple[str, ...] = (
    # the earliest armed timer of a run not waiting out a panic's backoff
    # (the decision source below has that run's not-before time)
    "SELECT fire_at FROM harvest_timers t WHERE NOT EXISTS (SELECT 1 FROM"
    " harvest_executions e WHERE e.exec_id = t.exec_id AND (("
    + PANIC_BACKOFF.replace("?", ":now")
    + ") OR e.pause_reason IS NOT NULL)) ORDER BY fire_at LIMIT 1",
    # an activity task waiting for its retry backoff (or ready now)
    "SELECT MIN(ready_at) FROM harvest_tasks WHERE status = 'PENDING'"
    + NOT_PAUSED_TASK,
    # an execution deadline (the run times out then)
    "SELECT MIN(deadline) FROM harvest_executions"
    " WHERE state = 'RUNNING' AND deadline IS NOT NULL AND pause_reason IS NULL",
    # a run flagged for a decision: now, or its not-before time (a retry's
    # backoff; a pending cancel skips it, as the decider does)
    "SELECT MIN(CASE WHEN not_before IS NOT NULL AND cancel_reason IS NULL"
    " AND not_before > :now THEN not_before ELSE :now END)"
    " FROM harvest_executions WHERE needs_decision = 1 AND state = 'RUNNING'"
    " AND pause_reason IS NULL",
    # the next slot of an unpaused schedule (a damaged slot is skipped: it only
    # warns), but for the schedules whose code is missing ({skip})
    "SELECT MIN(next_fire_at) FROM harvest_schedules"
    " WHERE paused = 0 AND NOT {not_whole}{skip}",
    # a client command waiting to be applied: now
    "SELECT MIN(:now) FROM harvest_commands WHERE applied_at IS NULL",
    # a debounced or batched start whose window closes (sql/shaping.py)
    HELD_DUE_SOURCE,
)


def due_statement(dialect: Dialect, extra: tuple[str, ...] = (), skips: int = 0) -> str:
    """The one statement of the earliest due time over `DUE_SOURCES` and `extra`.

    Build it at import; only a serving process missing some schedules' code
    builds one per call (`skips` of them, bound as ``skip0``, ``skip1``...).

    Args:
        dialect: the store's dialect.
        extra: sources of the store's own, already in its dialect.
        skips: how many workflows' schedules and held starts (by name) do not count.
    """
    not_whole = dialect.not_whole.format(column="next_fire_at")
    skip = ""
    if skips:
        marks = ", ".join(f":skip{i}" for i in range(skips))
        skip = f" AND workflow_name NOT IN ({marks})"
    sources = [
        dialect.render(
            source.replace("{not_whole}", f"({not_whole})").replace("{skip}", skip)
        )
        for source in DUE_SOURCES
    ]
    union = " UNION ALL ".join(f"SELECT ({s}) AS t" for s in [*sources, *extra])
    return f"SELECT MIN(t) FROM ({union}) AS due"


def earliest_due(
    conn: Executes, statement: str, now: datetime, skip_schedules: Sequence[str] = ()
) -> datetime | None:
    """The earliest time any waiting row comes due (maybe in the past); None if none waits.

    `statement` is `due_statement`'s with one skip mark per name of `skip_schedules`.
    """
    params: dict[str, object] = {"now": micros(now)}
    params.update((f"skip{i}", name) for i, name in enumerate(skip_schedules))
    row = conn.execute(statement, params).fetchone()
    return opt_time(row[0] if row is not None else None)
