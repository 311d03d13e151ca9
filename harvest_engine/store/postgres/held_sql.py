"""The SQL of a run's held writes (`deferred`): each alone, or one statement for all of them.

`statement` builds the one statement of a run's pieces, its text cached by
shape: the tasks it deletes, the attempts and claimed tasks it inserts, the
fields of the run's row it sets, and the run's end when it comes with them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.store.postgres.arrays import Ints, Texts
from harvest_engine.store.postgres.notify import DONE_CHANNEL
from harvest_engine.store.sql.dialect import POSTGRES
from harvest_engine.store.sql.run_rows import Assignments

if TYPE_CHECKING:
    from collections.abc import Callable

Stored = tuple[int, str, int, str]
"""An appended event as stored: seq, type, at (micros), attrs (JSON text)."""

_ATTEMPT_COLUMNS = (
    "exec_id, activity_id, activity_name, attempt, started_at, ended_at, outcome, error"
)
_TASK_COLUMNS = (
    "id, exec_id, activity_id, activity_name, input, queue, max_attempts, ready_at, "
    "scheduled_at, retry_policy, start_to_close, schedule_to_close_at, idempotency_key, "
    "local, heartbeat_timeout, status, claimed_at, worker_id, lease_expires_at"
)


def _task_marks(mark: Callable[[int], str]) -> str:
    """A claimed task's VALUES row: 15 columns, RUNNING, claimed at, by, its lease's end."""
    plain = ", ".join(mark(j) for j in range(15))
    return (
        f"({plain}, 'RUNNING', {mark(15)}, {mark(16)}, clock_timestamp() + "
        f"COALESCE(make_interval(secs => {mark(17)}), {mark(18)}::interval))"
    )


CLAIMED_TASK = (
    f"INSERT INTO harvest_tasks ({_TASK_COLUMNS}) VALUES {_task_marks(lambda _j: '%s')}"
)
"""A claimed task's row, alone (19 values: `Piece.claimed`)."""
ATTEMPT = (
    f"INSERT INTO harvest_activity_attempts ({_ATTEMPT_COLUMNS}) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)
"""An attempt's row, alone (8 values: `Piece.attempt`)."""
SEAL = (
    "WITH sealed AS (UPDATE harvest_executions SET state = %(state)s, "
    "closed_at = %(closed)s, output = %(output)s, error = %(error)s, "
    "needs_decision = 0 WHERE exec_id = %(id)s RETURNING exec_id), "
    "tasks AS (DELETE FROM harvest_tasks WHERE exec_id = %(id)s), "
    "timers AS (DELETE FROM harvest_timers WHERE exec_id = %(id)s), "
    "dropped AS (DELETE FROM harvest_signals WHERE exec_id = %(id)s "
    "AND idempotency_key IS NULL), "
    "kept AS (UPDATE harvest_signals SET delivered = 1 WHERE exec_id = %(id)s "
    "AND delivered = 0 AND idempotency_key IS NOT NULL), "
    "watchers AS (DELETE FROM harvest_run_watchers WHERE exec_id = %(id)s "
    "RETURNING watcher), "
    "woken AS (UPDATE harvest_executions SET needs_decision = 1 "
    "WHERE exec_id IN (SELECT watcher FROM watchers) AND state = 'RUNNING') "
    f"SELECT pg_notify('{DONE_CHANNEL}', exec_id) FROM sealed"
)
"""A run's end: its row, its tasks, timers and signals (the keyed signals stay,
delivered, for their idempotency) and the runs watching it (flagged, their
links gone); its notice tells a client waiting on the run's result (at
commit). Arguments: `Piece.seal`."""
_assignments = Assignments(POSTGRES)


_SHAPES: dict[tuple[int, int, int, tuple[str, ...], bool], str] = {}


def statement(
    exec_id: str,
    tasks: list[int],
    attempts: list[tuple[Any, ...]],
    claimed: list[tuple[Any, ...]],
    events: list[Stored],
    fields: dict[str, Any],
    seal: dict[str, Any] | None = None,
) -> tuple[str, dict[str, Any]]:
    """The one statement of a run's pieces, and its arguments (its text cached by shape)."""
    first = events[0][0]
    for offset, event in enumerate(events):
        if event[0] != first + offset:
            raise ValueError(f"held events of {exec_id} are not contiguous")
    _, values = _assignments(fields)  # refuses an unknown column
    shape = (len(tasks), len(attempts), len(claimed), tuple(fields), seal is not None)
    sql = _SHAPES.get(shape)
    if sql is None:
        sql = _SHAPES[shape] = _text(*shape)
    args: dict[str, Any] = {f"f{i}": v for i, v in enumerate(values)}
    if seal is not None:
        args.update(seal)  # state, closed, output, error (and id, the run's)
    args.update(id=exec_id, first=first, end=first + len(events))
    if len(tasks) == 1:
        args["task"] = tasks[0]
    elif tasks:
        args["tasks"] = Ints(tasks)
    for i, row in enumerate(attempts):
        for j, value in enumerate(row):
            args[f"a{i}_{j}"] = value
    for i, row in enumerate(claimed):
        for j, value in enumerate(row):
            args[f"t{i}_{j}"] = value
    seqs, types, ats, attrs = zip(*events, strict=True)
    args.update(seqs=Ints(seqs), types=Texts(types), ats=Ints(ats), attrs=Texts(attrs))
    return sql, args


def _named(prefix: str) -> Callable[[int], str]:
    """Marks %(<prefix>_<j>)s for the j-th value of a row."""
    return lambda j: f"%({prefix}_{j})s"


def _text(
    tasks: int, attempts: int, claimed: int, names: tuple[str, ...], seal: bool
) -> str:
    ctes: list[str] = []
    guard = others = ""
    if tasks:
        which = "id = %(task)s" if tasks == 1 else "id = ANY(%(tasks)s::bigint[])"
        ctes.append(f"gone AS (DELETE FROM harvest_tasks WHERE {which} RETURNING id)")
        guard = f" AND (SELECT COUNT(*) FROM gone) = {tasks}"
        # Rows two parts of one statement change are changed by one only.
        others = f" AND NOT ({which})"
    if attempts:
        rows = ", ".join(
            "(" + ", ".join(f"%(a{i}_{j})s" for j in range(8)) + ")"
            for i in range(attempts)
        )
        ctes.append(
            f"tried AS (INSERT INTO harvest_activity_attempts ({_ATTEMPT_COLUMNS}) "
            f"VALUES {rows})"
        )
    if claimed:
        rows = ", ".join(_task_marks(_named(f"t{i}")) for i in range(claimed))
        ctes.append(
            f"made AS (INSERT INTO harvest_tasks ({_TASK_COLUMNS}) VALUES {rows})"
        )
    sets = "".join(f", {name} = %(f{i})s" for i, name in enumerate(names))
    if seal:
        sets += _SEAL_SETS
    ctes.append(
        "moved AS (UPDATE harvest_executions SET next_seq = %(end)s, "
        f"history_bytes = history_bytes + %(size)s{sets} "
        f"WHERE exec_id = %(id)s AND next_seq = %(first)s{guard} RETURNING exec_id)"
    )
    # The events as arrays (unnest): a payload codec finds their attrs there.
    insert = (
        "INSERT INTO harvest_events (exec_id, seq, type, at, attrs) "
        "SELECT moved.exec_id, e.seq, e.type, e.at, e.attrs FROM moved, "
        "unnest(%(seqs)s::integer[], %(types)s::text[], %(ats)s::bigint[], "
        "%(attrs)s::text[]) AS e(seq, type, at, attrs)"
    )
    if not seal:
        return "WITH " + ", ".join(ctes) + " " + insert
    ctes.append(f"added AS ({insert})")
    ctes += [cte.format(others=others) for cte in _SEAL_CTES]
    # Its notice tells a client waiting on the run's result (at commit); one
    # row an event, as the append's own count (Postgres folds the repeats).
    return (
        "WITH "
        + ", ".join(ctes)
        + f" SELECT pg_notify('{DONE_CHANNEL}', exec_id) FROM moved, "
        "unnest(%(seqs)s::integer[]) AS n(seq)"
    )


_SEAL_SETS = (
    ", state = %(state)s, closed_at = %(closed)s, output = %(output)s, "
    "error = %(error)s, needs_decision = 0"
)
"""SEAL's columns of the run's row, set by the append's own UPDATE of it."""
_SEAL_CTES = (
    "tasks AS (DELETE FROM harvest_tasks WHERE exec_id = %(id)s{others})",
    "timers AS (DELETE FROM harvest_timers WHERE exec_id = %(id)s)",
    "dropped AS (DELETE FROM harvest_signals WHERE exec_id = %(id)s "
    "AND idempotency_key IS NULL)",
    "kept AS (UPDATE harvest_signals SET delivered = 1 WHERE exec_id = %(id)s "
    "AND delivered = 0 AND idempotency_key IS NOT NULL)",
    "watchers AS (DELETE FROM harvest_run_watchers WHERE exec_id = %(id)s "
    "RETURNING watcher)",
    "woken AS (UPDATE harvest_executions SET needs_decision = 1 "
    "WHERE exec_id IN (SELECT watcher FROM watchers) AND state = 'RUNNING' "
    "AND exec_id <> %(id)s)",
)
"""The rest of SEAL, after a run's last append (its tasks but the ones the
statement deletes itself, its timers, signals and watchers), as SEAL's."""
