"""Several runs' held writes (`deferred`) as ONE statement: arrays, one element a row.

A pass records the outcomes of, and decides, up to a queue's concurrency of
runs in one transaction, and each run's held writes were a statement of
their own (`held_sql.statement`): some eighty Python calls of psycopg per
statement in the worker and a statement's overhead in the server, eight
times per pass. Here the runs' task deletes, attempt rows, claimed tasks,
row moves and events travel as arrays, unnested by one statement; its
shape depends only on which kinds of rows it carries, so its text is kept.

The guards stay per run: a run's row moves only if its next seq is its
first event's and every held task of that run was still there (`gone`,
counted per run); a run whose row did not move writes no events, and the
transaction fails at the appends check (`appends_check`), as before.

`sealed` statements carry runs that each end with their last writes (each
run's end as `held_sql`'s one-run form sets it): their tasks, timers,
signals and watchers go, and the runs watching them are flagged, except
the statement's own runs, which it ends (the flag an ended run gets is
cleared by its own end, whichever came first). A run whose writes append
nothing or set a field not held (`eligible`), and every run on a codec's
connection (it encodes one run's statement), goes the one-run way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from harvest_engine.store.postgres.arrays import (
    Ints,
    MaybeFloats,
    MaybeInts,
    MaybeTexts,
    Texts,
)
from harvest_engine.store.postgres.notify import DONE_CHANNEL

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harvest_engine.store.postgres.held_sql import Stored


class HeldPiece(Protocol):
    """What a batch reads of a held write (`deferred.Piece`)."""

    task: int | None
    attempt: tuple[Any, ...] | None
    claimed: tuple[Any, ...] | None
    events: list[Stored]
    fields: dict[str, Any]
    size: int


Group = tuple[str, "Sequence[HeldPiece]", "dict[str, Any] | None"]
"""One run's held pieces, in order, and its end (SEAL's arguments) if they end it."""

HELD_FIELDS = frozenset({"needs_decision", "panic_count"})
"""An append that sets no other field of the run's row may wait for the next statement
(no client or flow read in the transaction looks at them): `deferred`."""

# The types of an attempt's row and a claimed task's (CLAIMED_TASK's first 18
# values; the lease's end from seconds), as their arrays are cast.
_ATTEMPT = (
    ("exec_id", "text", MaybeTexts),
    ("activity_id", "integer", MaybeInts),
    ("activity_name", "text", MaybeTexts),
    ("attempt", "integer", MaybeInts),
    ("started_at", "bigint", MaybeInts),
    ("ended_at", "bigint", MaybeInts),
    ("outcome", "text", MaybeTexts),
    ("error", "text", MaybeTexts),
)
_CLAIMED = (
    ("id", "bigint", MaybeInts),
    ("exec_id", "text", MaybeTexts),
    ("activity_id", "integer", MaybeInts),
    ("activity_name", "text", MaybeTexts),
    ("input", "text", MaybeTexts),
    ("queue", "text", MaybeTexts),
    ("max_attempts", "integer", MaybeInts),
    ("ready_at", "bigint", MaybeInts),
    ("scheduled_at", "bigint", MaybeInts),
    ("retry_policy", "text", MaybeTexts),
    ("start_to_close", "double precision", MaybeFloats),
    ("schedule_to_close_at", "bigint", MaybeInts),
    ("idempotency_key", "text", MaybeTexts),
    ("local", "integer", MaybeInts),
    ("heartbeat_timeout", "double precision", MaybeFloats),
    ("claimed_at", "bigint", MaybeInts),
    ("worker_id", "text", MaybeTexts),
    ("lease_secs", "double precision", MaybeFloats),
)


def _unnest(prefix: str, columns: tuple[tuple[str, str, type], ...]) -> str:
    arrays = ", ".join(
        f"%({prefix}{j})s::{kind}[]" for j, (_, kind, _) in enumerate(columns)
    )
    names = ", ".join(name for name, _, _ in columns)
    return f"unnest({arrays}) AS {prefix}({names})"


_TRIED = (
    "tried AS (INSERT INTO harvest_activity_attempts ("
    + ", ".join(name for name, _, _ in _ATTEMPT)
    + f") SELECT * FROM {_unnest('a', _ATTEMPT)})"
)
_MADE = (
    "made AS (INSERT INTO harvest_tasks ("
    + ", ".join(name for name, _, _ in _CLAIMED[:17])
    + ", status, lease_expires_at) SELECT "
    + ", ".join(f"t.{name}" for name, _, _ in _CLAIMED[:17])
    + ", 'RUNNING', clock_timestamp() + make_interval(secs => t.lease_secs) "
    + f"FROM {_unnest('t', _CLAIMED)})"
)
_RUNS = (
    "r AS (SELECT * FROM unnest(%(ids)s::text[], %(firsts)s::integer[], "
    "%(ends)s::integer[], %(sizes)s::bigint[], %(ntasks)s::integer[], "
    "%(nds)s::integer[], %(pcs)s::integer[]{sealed}) "
    "AS r(id, first_seq, end_seq, size, ntasks, nd, pc{sealed_names}))"
)
_EVENTS = (
    "INSERT INTO harvest_events (exec_id, seq, type, at, attrs) "
    "SELECT v.exec_id, v.seq, v.type, v.at, v.attrs FROM unnest(%(evs)s::text[], "
    "%(seqs)s::integer[], %(types)s::text[], %(ats)s::bigint[], %(attrs)s::text[]) "
    "AS v(exec_id, seq, type, at, attrs) JOIN moved ON moved.exec_id = v.exec_id"
)
_ENDS = (
    "tasks AS (DELETE FROM harvest_tasks WHERE exec_id = ANY(%(ids)s::text[]){others})",
    "timers AS (DELETE FROM harvest_timers WHERE exec_id = ANY(%(ids)s::text[]))",
    "dropped AS (DELETE FROM harvest_signals WHERE exec_id = ANY(%(ids)s::text[]) "
    "AND idempotency_key IS NULL)",
    "kept AS (UPDATE harvest_signals SET delivered = 1 WHERE exec_id = ANY(%(ids)s::text[]) "
    "AND delivered = 0 AND idempotency_key IS NOT NULL)",
    "watchers AS (DELETE FROM harvest_run_watchers WHERE exec_id = ANY(%(ids)s::text[]) "
    "RETURNING watcher)",
    "woken AS (UPDATE harvest_executions SET needs_decision = 1 "
    "WHERE exec_id IN (SELECT watcher FROM watchers) AND state = 'RUNNING' "
    "AND exec_id <> ALL(%(ids)s::text[]))",
)
"""SEAL's parts for every run of the statement (`held_sql._SEAL_CTES`, by arrays)."""


def _text(tasks: bool, attempts: bool, claimed: bool, sealed: bool) -> str:
    ctes = [
        _RUNS.format(
            sealed=", %(states)s::text[], %(closeds)s::bigint[], %(outputs)s::text[], "
            "%(errors)s::text[]"
            if sealed
            else "",
            sealed_names=", state, closed, output, error" if sealed else "",
        )
    ]
    guard = ""
    if tasks:
        ctes.append(
            "gone AS (DELETE FROM harvest_tasks WHERE id = ANY(%(tasks)s::bigint[]) "
            "RETURNING exec_id)"
        )
        guard = " AND (SELECT COUNT(*) FROM gone WHERE gone.exec_id = r.id) = r.ntasks"
    if attempts:
        ctes.append(_TRIED)
    if claimed:
        ctes.append(_MADE)
    sets = (
        ", state = r.state, closed_at = r.closed, output = r.output, error = r.error, "
        "needs_decision = 0"
        if sealed
        else ", needs_decision = COALESCE(r.nd, e.needs_decision)"
    )
    ctes.append(
        "moved AS (UPDATE harvest_executions e SET next_seq = r.end_seq, "
        "history_bytes = e.history_bytes + r.size, "
        f"panic_count = COALESCE(r.pc, e.panic_count){sets} FROM r "
        f"WHERE e.exec_id = r.id AND e.next_seq = r.first_seq{guard} RETURNING e.exec_id)"
    )
    if not sealed:
        return "WITH " + ", ".join(ctes) + " " + _EVENTS
    ctes.append(f"added AS ({_EVENTS})")
    others = " AND id <> ALL(%(tasks)s::bigint[])" if tasks else ""
    ctes += [cte.format(others=others) for cte in _ENDS]
    # Its notice tells a client waiting on the run's result (at commit).
    return (
        "WITH "
        + ", ".join(ctes)
        + f" SELECT pg_notify('{DONE_CHANNEL}', exec_id) FROM moved"
    )


_SHAPES: dict[tuple[bool, bool, bool, bool], str] = {}


def eligible(pieces: Sequence[HeldPiece]) -> bool:
    """Whether a run's pieces can join a batch: they append, and set held fields only."""
    appends = False
    for piece in pieces:
        if piece.events:
            appends = True
        if piece.fields and not piece.fields.keys() <= HELD_FIELDS:
            return False
    return appends


def statement(
    groups: Sequence[Group],
) -> tuple[str, dict[str, Any], list[tuple[str, int, int, tuple[int, ...]]]]:
    """The one statement of `groups` (all ending their run, or none), its arguments, and each run's append.

    Each append: its run, first seq, event count and the held tasks it deletes.
    """
    # Each run's row: id, first seq, end seq, size, held tasks, needs_decision, panic_count.
    runs: list[tuple[str, int, int, int, int, int | None, int | None]] = []
    tasks: list[int] = []
    attempts: list[tuple[Any, ...]] = []
    claimed: list[tuple[Any, ...]] = []
    events: list[Stored] = []
    evs: list[str] = []
    seals: list[dict[str, Any]] = []
    appends: list[tuple[str, int, int, tuple[int, ...]]] = []
    for exec_id, pieces, seal in groups:
        first = end = -1
        size = 0
        fields: dict[str, Any] = {}
        own: list[int] = []
        for piece in pieces:
            if piece.task is not None:
                own.append(piece.task)
            if piece.attempt is not None:
                attempts.append(piece.attempt)
            if piece.claimed is not None:
                values = piece.claimed
                # The lease's end from seconds: the task's heartbeat timeout, else the lease.
                secs = (
                    values[14] if values[14] is not None else values[18].total_seconds()
                )
                claimed.append((*values[:17], secs))
            stored = piece.events
            if stored:
                if first < 0:
                    first = stored[0][0]
                elif stored[0][0] != end:
                    raise ValueError(f"held events of {exec_id} are not contiguous")
                end = stored[-1][0] + 1
                events += stored
                size += piece.size
            if piece.fields:
                fields.update(piece.fields)
        evs += [exec_id] * (end - first)
        tasks += own
        runs.append(
            (
                exec_id,
                first,
                end,
                size,
                len(own),
                fields.get("needs_decision"),
                fields.get("panic_count"),
            )
        )
        appends.append((exec_id, first, end - first, tuple(own)))
        if seal is not None:
            seals.append(seal)
    if len(events) != len(evs):
        raise ValueError("held events of a run are not contiguous")
    sealed = bool(seals)
    shape = (bool(tasks), bool(attempts), bool(claimed), sealed)
    sql = _SHAPES.get(shape)
    if sql is None:
        sql = _SHAPES[shape] = _text(*shape)
    seqs, types, ats, attrs = zip(*events, strict=True)
    ids, firsts, ends, sizes, ntasks, nds, pcs = zip(*runs, strict=True)
    args: dict[str, Any] = {
        "ids": Texts(ids),
        "firsts": Ints(firsts),
        "ends": Ints(ends),
        "sizes": Ints(sizes),
        "ntasks": Ints(ntasks),
        "nds": MaybeInts(nds),
        "pcs": MaybeInts(pcs),
        "evs": Texts(evs),
        "seqs": Ints(seqs),
        "types": Texts(types),
        "ats": Ints(ats),
        "attrs": Texts(attrs),
    }
    if tasks:
        args["tasks"] = Ints(tasks)
    if attempts:
        _columns(args, "a", _ATTEMPT, attempts)
    if claimed:
        _columns(args, "t", _CLAIMED, claimed)
    if sealed:
        args["states"] = Texts([s["state"] for s in seals])
        args["closeds"] = Ints([s["closed"] for s in seals])
        args["outputs"] = MaybeTexts([s["output"] for s in seals])
        args["errors"] = MaybeTexts([s["error"] for s in seals])
    return sql, args, appends


def _columns(
    args: dict[str, Any],
    prefix: str,
    columns: tuple[tuple[str, str, type], ...],
    rows: list[tuple[Any, ...]],
) -> None:
    """Each column of `rows` as one array argument, `<prefix><j>`."""
    for j, ((_, _, kind), values) in enumerate(
        zip(columns, zip(*rows, strict=True), strict=True)
    ):
        args[f"{prefix}{j}"] = kind(values)
