"""Write transactions in libpq pipeline mode: a statement whose result nobody reads costs no round trip.

A decision is mostly writes (events, task rows, the run's row) between a few
reads. Outside pipeline mode every statement waits for the server's answer;
in it, statements queue up and travel together, the server works through
them while the worker goes on, and only a read (a fetch) waits, for the
results up to it. COMMIT travels with the last writes, in one round trip.

What this changes and what it does not:
- A failing statement raises at the next read or at the commit, not where it
  was sent; the transaction still rolls back as a whole, so nothing of it is
  kept and nothing is reported done (the commit's own result is awaited).
- `rowcount` is only known once its result arrived: statements that need it
  run in `settled()` (a nested pipeline, which syncs at its end).
- A sync first flushes what libpq has not sent yet (`pipeline_sync`): psycopg
  would otherwise wait forever for the answer to a large statement the server
  has not fully received.
- Savepoints are plain SAVEPOINT / ROLLBACK TO / RELEASE statements, queued
  like the rest (psycopg's `transaction()` syncs on entering and leaving one);
  one whose block succeeded is left open, not released (see `roll_back_to`),
  and one is sent only once its block sends a statement (`deferred`).
"""

from __future__ import annotations

import logging
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import pq

from harvest_engine.store.postgres.cursors import Cursors
from harvest_engine.store.sql import pipeline_sync

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

log = logging.getLogger("harvest_engine.postgres")

Conn = psycopg.Connection[tuple[Any, ...]]


@contextmanager
def transaction(
    conn: Conn, before_commit: Callable[[], None], cursors: Cursors | None = None
) -> Iterator[None]:
    """BEGIN ... COMMIT in pipeline mode; `before_commit()` runs last inside it.

    Returns only once the server has answered the COMMIT; any error of the
    block, of a queued statement or of the commit rolls everything back and
    propagates. `cursors`: BEGIN and COMMIT on their kept cursors.
    """
    cursors = cursors or Cursors()
    committed = False
    try:
        with conn.pipeline():
            cursors.execute(conn, "begin", "BEGIN", prepare=False)
            try:
                yield
                before_commit()
            except BaseException:
                # Queued; skipped by the server when an earlier statement
                # failed (the pipeline is aborted), then repeated below.
                conn.execute("ROLLBACK", prepare=False)
                raise
            commit = cursors.execute(conn, "commit", "COMMIT", prepare=False)
        # A COMMIT of a transaction that failed (a savepoint could not undo
        # an error, say) rolls back and says so: never report that as done.
        if commit.statusmessage != "COMMIT":
            raise psycopg.errors.InFailedSqlTransaction(
                f"the transaction was rolled back at its commit ({commit.statusmessage})"
            )
        committed = True
    finally:
        if not committed:
            _end_failed(conn)


def _end_failed(conn: Conn) -> None:
    """Leave the connection idle after a failed transaction (ROLLBACK if still in one)."""
    if conn.closed or conn.broken:
        return
    with suppress(psycopg.Error):
        if conn.info.transaction_status != pq.TransactionStatus.IDLE:
            conn.execute("ROLLBACK", prepare=False)


def roll_back_to(conn: Conn, name: str) -> None:
    """Undo a failed block's changes: back to its savepoint, which then goes.

    A statement of the block that failed (its error is the one raised, e.g.
    a NOWAIT lock refused) left the pipeline aborted: sync past it, then
    undo the block. Errors met here are the block's own, which the rollback
    undoes; if the savepoint itself is gone (an earlier statement failed),
    the ROLLBACK TO fails and the transaction with it.

    A block that succeeded is not released: its changes join the
    transaction at its COMMIT all the same, and a RELEASE is a statement
    per decision. The next savepoint of the same name nests inside it;
    ROLLBACK TO names the newest, so a failing block still undoes only its
    own changes (and those of blocks nested in it).
    """
    with suppress(psycopg.Error):
        sync(conn)
    conn.execute(f"ROLLBACK TO SAVEPOINT {name}", prepare=False)
    conn.execute(f"RELEASE SAVEPOINT {name}", prepare=False)
    sync(conn)


def settled(
    conn: Conn, sql: str, args: tuple[object, ...] | dict[str, object] | None = None
) -> psycopg.Cursor[tuple[Any, ...]]:
    """Run one statement and wait for its result, so its `rowcount` is known."""
    cursor: psycopg.Cursor[tuple[Any, ...]] = pipeline_sync.settled(conn, sql, args)
    return cursor


def sync(conn: Conn) -> None:
    """Wait for every queued statement's result (their errors raise here): one round trip."""
    pipeline_sync.sync(conn)
