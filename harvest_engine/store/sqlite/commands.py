"""Command-queue SQL: a client inserts one row; the serving process applies rows in id order.

The client side (`submit`, `reply`) runs on a client's own connection and
writes nothing but its one row, in one short transaction; the serving side
(`pending`, `finish`, `purge_applied`) runs inside the writer's transaction
that also holds the command's effect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.store.rows import CommandRecord
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    import sqlite3
    from datetime import datetime


def submit(
    conn: sqlite3.Connection, command_id: str, kind: str, args: str, now: datetime
) -> bool:
    """Queue one command in its own short transaction: wholly queued, or absent.

    A command id already queued (a retry) queues nothing: False. The row
    stays the first call's, so the command is applied once.

    Raises:
        ValueError: the id names a different command (nothing is queued).
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        cursor = conn.execute(
            "INSERT INTO harvest_commands (command_id, kind, args, submitted_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (command_id) DO NOTHING",
            (command_id, kind, args, micros(now)),
        )
        queued = cursor.rowcount > 0
        if not queued:
            held = conn.execute(
                "SELECT kind, args FROM harvest_commands WHERE command_id = ?",
                (command_id,),
            ).fetchone()
            refuse_other(command_id, kind, args, held)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return queued


def refuse_other(
    command_id: str, kind: str, args: str, held: tuple[str, str] | None
) -> None:
    """Raise when the queued command of this id is not this call (kind and arguments)."""
    if held is not None and (held[0], held[1]) != (kind, args):
        raise ValueError(
            f"command id {command_id!r} already names another command "
            f"({held[0]} with other arguments): a retry must repeat the call exactly"
        )


def reply(conn: sqlite3.Connection, command_id: str) -> tuple[bool, str | None] | None:
    """(applied, reply JSON) of a queued command; None when no row has this id."""
    row = conn.execute(
        "SELECT applied_at IS NOT NULL, reply FROM harvest_commands WHERE command_id = ?",
        (command_id,),
    ).fetchone()
    return None if row is None else (bool(row[0]), row[1])


def withdraw(conn: sqlite3.Connection, command_id: str) -> bool:
    """Delete a command no one applied yet (its own short transaction); False when none went.

    An applied command keeps its row (and reply): its effect happened.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        cursor = conn.execute(
            "DELETE FROM harvest_commands WHERE command_id = ? AND applied_at IS NULL",
            (command_id,),
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return cursor.rowcount > 0


REFUSED = "reply LIKE '{\"error\":%'"
"""SQL: an applied command that was refused (its reply carries an error, wire.error_reply)."""


def settle_refused(conn: sqlite3.Connection, command_id: str) -> bool:
    """Delete a refused command whose reply its client has read; False when it is not one."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        cursor = conn.execute(
            "DELETE FROM harvest_commands WHERE command_id = ? "
            f"AND applied_at IS NOT NULL AND {REFUSED}",
            (command_id,),
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return cursor.rowcount > 0


def pending(conn: sqlite3.Connection, limit: int) -> list[CommandRecord]:
    """Unapplied commands, oldest first (the partial index holds only these)."""
    rows = conn.execute(
        "SELECT id, command_id, kind, args, submitted_at FROM harvest_commands "
        "WHERE applied_at IS NULL ORDER BY id LIMIT ?",
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


def is_pending(conn: sqlite3.Connection, row_id: int) -> bool:
    """Whether the command row is still waiting to be applied."""
    row = conn.execute(
        "SELECT 1 FROM harvest_commands WHERE id = ? AND applied_at IS NULL", (row_id,)
    ).fetchone()
    return row is not None


def finish(
    conn: sqlite3.Connection,
    row_id: int,
    reply_json: str,
    exec_id: str | None,
    now: datetime,
) -> None:
    """Mark a command applied with its reply and the run it touched."""
    conn.execute(
        "UPDATE harvest_commands SET applied_at = ?, reply = ?, exec_id = ? WHERE id = ?",
        (micros(now), reply_json, exec_id, row_id),
    )


def purge_applied(
    conn: sqlite3.Connection, cutoff: datetime, refused_cutoff: datetime, limit: int
) -> int:
    """Delete up to `limit` commands applied before `cutoff` (refused: before `refused_cutoff`)."""
    cursor = conn.execute(
        "DELETE FROM harvest_commands WHERE id IN (SELECT id FROM harvest_commands "
        f"WHERE applied_at IS NOT NULL AND (applied_at < ? OR (applied_at < ? AND {REFUSED})) "
        "ORDER BY applied_at LIMIT ?)",
        (micros(cutoff), micros(refused_cutoff), limit),
    )
    return cursor.rowcount
