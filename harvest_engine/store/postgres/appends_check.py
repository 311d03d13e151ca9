"""The check that a transaction's appends all landed, made by the server in the commit's round trip.

An append moves its run's next_seq only if the run's history ended where
the append begins (and every held task it deletes was there, `deferred`);
one that did not move wrote nothing. The worker used to wait for the
appends' row counts before sending COMMIT: a round trip of its own. Here
one statement, queued behind the appends and before the COMMIT, asks the
server whether each run's next_seq is now where its last append ended
(the rows are locked: nobody else moves them), and fails the transaction
if not, so COMMIT rolls back. The error names nothing; `diagnosis` reads
the runs again (after the rollback) to say which append failed and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine.errors import HarvestInternalError
from harvest_engine.store.postgres.arrays import Ints, Texts
from harvest_engine.store.postgres.cursors import Cursors
from harvest_engine.store.postgres.notify import CHANNEL

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True)
class Append:
    """One held append, checked before the commit (its statement may carry other runs')."""

    exec_id: str
    first: int
    count: int
    tasks: tuple[int, ...] = ()  # held tasks its statement deletes (`deferred`)


_MARK = "harvest: appends landed "

# The failing cast depends on the count (a row value), so the planner cannot
# fold it into a constant and fail a transaction whose appends did land.
_FROM = (
    "FROM harvest_executions e JOIN unnest(%s::text[], %s::integer[]) "
    "AS x(id, seq_end) ON e.exec_id = x.id AND e.next_seq = x.seq_end"
)
CHECK = (
    "SELECT CAST(CASE WHEN count(*) = %s THEN '0' ELSE "
    f"'{_MARK}' || count(*) END AS integer) " + _FROM
)
CHECK_WAKING = (
    "SELECT CAST(CASE WHEN count(*) = %s THEN '0' ELSE "
    f"'{_MARK}' || count(*) END AS integer), pg_notify('{CHANNEL}', %s) " + _FROM
)
"""CHECK with the commit's wake notice (`notify.NOTIFY`'s): one statement, not two."""


def send(
    conn: psycopg.Connection[tuple[Any, ...]],
    appends: Sequence[Append],
    wake: str | None = None,
    cursors: Cursors | None = None,
) -> None:
    """Queue the check of `appends` (its answer is not awaited: the COMMIT's is).

    With `wake` (a worker id) it also sends the commit's wake notice;
    `cursors`: on its kept cursor (its result is never read).
    """
    cursors = cursors or Cursors()
    ends = {a.exec_id: a.first + a.count for a in appends}  # each run's last
    ids, seq_ends = Texts(ends), Ints(ends.values())
    if wake is None:
        cursors.execute(conn, "check", CHECK, (len(ends), ids, seq_ends))
    else:
        args = (len(ends), wake, ids, seq_ends)
        cursors.execute(conn, "check and wake", CHECK_WAKING, args)


def diagnosis(
    exc: BaseException,
    conn: psycopg.Connection[tuple[Any, ...]],
    appends: Sequence[Append],
) -> HarvestInternalError | None:
    """If `exc` is this check failing: which append failed and why; else None.

    Read after the rollback (the runs as they were); None too when that
    read fails (the caller reports `exc` as the storage error it is).
    """
    if not (
        isinstance(exc, psycopg.errors.InvalidTextRepresentation) and _MARK in str(exc)
    ):
        return None
    try:
        return explain(conn, appends)
    except psycopg.Error:
        return None


def explain(
    conn: psycopg.Connection[tuple[Any, ...]], appends: Sequence[Append]
) -> HarvestInternalError:
    """Why `appends` (which did not all land) failed, from their runs' next seq now.

    Read after the rollback: every run is as before the transaction.
    """
    seen: set[str] = set()
    for append in appends:
        if append.exec_id in seen:
            continue  # a run's later appends start where its first one ended
        seen.add(append.exec_id)
        row = conn.execute(
            "SELECT next_seq FROM harvest_executions WHERE exec_id = %s",
            (append.exec_id,),
        ).fetchone()
        if row is None:
            return HarvestInternalError(
                f"append_events to unknown run {append.exec_id}"
            )
        if row[0] != append.first:
            return HarvestInternalError(
                f"event seq {append.first} does not continue run {append.exec_id} "
                f"(next was {row[0]})"
            )
        tasks = [t for a in appends if a.exec_id == append.exec_id for t in a.tasks]
        if tasks:
            return HarvestInternalError(
                f"tasks {tasks} of run {append.exec_id} were gone"
            )
    return HarvestInternalError("an append of this transaction did not land")
