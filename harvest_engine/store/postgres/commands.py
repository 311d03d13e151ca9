"""Command-queue SQL of the Postgres store: clients insert rows, a serving worker applies them.

The same rows as the SQLite store's queue. With many serving workers, a
worker takes the pending rows FOR UPDATE SKIP LOCKED inside the transaction
that applies them, so each command is applied by exactly one worker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.store.postgres import pipelined
from harvest_engine.store.postgres.notify import REPLY_CHANNEL
from harvest_engine.store.rows import CommandRecord
from harvest_engine.store.sqlite.commands import REFUSED, refuse_other
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    from datetime import datetime

    import psycopg


def submit(
    conn: psycopg.Connection[tuple[Any, ...]],
    command_id: str,
    kind: str,
    args: str,
    now: datetime,
) -> bool:
    """Queue one command and wake the serving workers: one statement, wholly done or not.

    The insert and the notice are one autocommit statement (one round trip):
    the notice goes out when the row is committed. A command id already
    queued (a retry) queues nothing: False (the SQLite store's rule).

    Raises:
        ValueError: the id names a different command (nothing is queued).
    """
    row = conn.execute(
        "WITH queued AS (INSERT INTO harvest_commands (command_id, kind, args, "
        "submitted_at) VALUES (%s, %s, %s, %s) ON CONFLICT (command_id) DO NOTHING "
        "RETURNING 1) SELECT pg_notify('harvest_wake', 'command') FROM queued",
        (command_id, kind, args, micros(now)),
    ).fetchone()
    if row is not None:
        return True
    held = conn.execute(
        "SELECT kind, args FROM harvest_commands WHERE command_id = %s", (command_id,)
    ).fetchone()
    refuse_other(command_id, kind, args, None if held is None else (held[0], held[1]))
    return False


def reply(
    conn: psycopg.Connection[tuple[Any, ...]], command_id: str
) -> tuple[bool, str | None] | None:
    """(applied, reply JSON) of a queued command; None when no row has this id."""
    row = conn.execute(
        "SELECT applied_at IS NOT NULL, reply FROM harvest_commands WHERE command_id = %s",
        (command_id,),
    ).fetchone()
    return None if row is None else (bool(row[0]), row[1])


def withdraw(conn: psycopg.Connection[tuple[Any, ...]], command_id: str) -> bool:
    """Delete a command no worker applied yet (autocommit); False when none went.

    A worker applying it holds its row: the delete waits, then finds it
    applied and leaves it (the effect happened, the reply stays).
    """
    cursor = conn.execute(
        "DELETE FROM harvest_commands WHERE command_id = %s AND applied_at IS NULL",
        (command_id,),
    )
    return cursor.rowcount > 0


HEARTBEAT_KEY = "serving_heartbeat"
"""The harvest_meta key serving workers write their latest beat (micros) to."""

# The server's clock, in micros: workers and clients on other machines
# compare beats with one clock.
_SERVER_NOW = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"


def beat(conn: psycopg.Connection[tuple[Any, ...]]) -> None:
    """Record that a worker serves the database now (the server's clock; the latest beat wins)."""
    conn.execute(
        f"INSERT INTO harvest_meta (key, value) VALUES (%s, {_SERVER_NOW}::text) "
        "ON CONFLICT (key) DO UPDATE SET value = GREATEST(harvest_meta.value::bigint, "
        "excluded.value::bigint)::text",
        (HEARTBEAT_KEY,),
    )


def served_ago(conn: psycopg.Connection[tuple[Any, ...]]) -> float | None:
    """Seconds since a worker last beat (by the server's clock); None when none ever did."""
    row = conn.execute(
        f"SELECT {_SERVER_NOW} - value::bigint FROM harvest_meta WHERE key = %s",
        (HEARTBEAT_KEY,),
    ).fetchone()
    return None if row is None else int(row[0]) / 1_000_000


def settle_refused(conn: psycopg.Connection[tuple[Any, ...]], command_id: str) -> bool:
    """Delete a refused command whose reply its client has read; False when it is not one."""
    cursor = conn.execute(
        "DELETE FROM harvest_commands WHERE command_id = %s "
        f"AND applied_at IS NOT NULL AND {REFUSED.replace('%', '%%')}",
        (command_id,),
    )
    return cursor.rowcount > 0


def pending(
    conn: psycopg.Connection[tuple[Any, ...]], limit: int, *, lock: bool = False
) -> list[CommandRecord]:
    """Unapplied commands, oldest first; with `lock`, the rows no other worker holds, locked."""
    rows = conn.execute(
        "SELECT id, command_id, kind, args, submitted_at FROM harvest_commands "
        "WHERE applied_at IS NULL ORDER BY id LIMIT %s"
        + (" FOR UPDATE SKIP LOCKED" if lock else ""),
        (limit,),
    ).fetchall()
    return [
        CommandRecord(
            id=row[0],
            command_id=row[1],
            kind=row[2],
            args=row[3],
            submitted_at=from_micros(row[4]),
        )
        for row in rows
    ]


def finish(
    conn: psycopg.Connection[tuple[Any, ...]],
    row_id: int,
    reply_json: str,
    exec_id: str | None,
    now: datetime,
) -> None:
    """Mark a command applied with its reply and the run it touched (if no one did first).

    The same statement notifies the waiting client (``harvest_reply``, the
    command id), which hears it when this transaction commits.
    """
    conn.execute(
        "WITH done AS (UPDATE harvest_commands SET applied_at = %s, reply = %s, "
        "exec_id = %s WHERE id = %s AND applied_at IS NULL RETURNING command_id) "
        f"SELECT pg_notify('{REPLY_CHANNEL}', command_id) FROM done",
        (micros(now), reply_json, exec_id, row_id),
    )


def purge_applied(
    conn: psycopg.Connection[tuple[Any, ...]],
    cutoff: datetime,
    refused_cutoff: datetime,
    limit: int,
) -> int:
    """Delete up to `limit` commands applied before `cutoff` (refused: before `refused_cutoff`)."""
    # Settled: in a pipelined transaction the count is known only once answered.
    return pipelined.settled(
        conn,
        "DELETE FROM harvest_commands WHERE id IN (SELECT id FROM harvest_commands "
        "WHERE applied_at IS NOT NULL AND (applied_at < %s OR (applied_at < %s AND "
        f"{REFUSED.replace('%', '%%')})) ORDER BY applied_at LIMIT %s)",
        (micros(cutoff), micros(refused_cutoff), limit),
    ).rowcount
