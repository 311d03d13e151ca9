"""Command-queue SQL of either store: a client inserts one row; the serving side applies rows in id order.

The client side (`insert`, `reply`, `withdraw`, `settle_refused`) runs on a
client's own connection and writes nothing but its own row; the serving side
(`pending`, `claim`, `finish`, `purge_applied`) runs inside the writer's
transaction that also holds the command's effect. How a client's row is committed and how a
waiting client hears of its reply are each store's own (SQLite's short
``BEGIN IMMEDIATE``; Postgres's NOTIFY in the same statement).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.store.rows import CommandRecord
from harvest_engine.store.sql.dialect import POSTGRES, SQLITE, Dialect
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from harvest_engine.store.sql.executes import Executes, Rows

INSERT = (
    "INSERT INTO harvest_commands (command_id, kind, args, submitted_at) "
    "VALUES (?, ?, ?, ?) ON CONFLICT (command_id) DO NOTHING"
)
"""Queue one command row, written with SQLite's marks (render it per dialect)."""

REFUSED_PREFIX = '{"error":'
"""How the reply of a refused command begins (wire.error_reply): it changed nothing."""


def refuse_other(
    command_id: str, kind: str, args: str, held: tuple[str, str] | None
) -> None:
    """Raise when the queued command of this id is not this call (kind and arguments)."""
    if held is not None and (held[0], held[1]) != (kind, args):
        raise ValueError(
            f"command id {command_id!r} already names another command "
            f"({held[0]} with other arguments): a retry must repeat the call exactly"
        )


def command_record(row: Sequence[Any]) -> CommandRecord:
    """A command row as `pending` and `claim_row` select it."""
    return CommandRecord(
        id=row[0],
        command_id=row[1],
        kind=row[2],
        args=row[3],
        submitted_at=from_micros(row[4]),
    )


class Commands:
    """The command-queue statements in one dialect, rendered once when built."""

    def __init__(self, dialect: Dialect) -> None:
        r = dialect.render
        self._dialect = dialect
        self.insert = r(INSERT)
        self._held = r("SELECT kind, args FROM harvest_commands WHERE command_id = ?")
        self._reply = r(
            "SELECT applied_at IS NOT NULL, reply FROM harvest_commands "
            "WHERE command_id = ?"
        )
        self._pending = r(
            "SELECT id, command_id, kind, args, submitted_at FROM harvest_commands "
            "WHERE applied_at IS NULL ORDER BY id LIMIT ?"
        )
        # Many serving workers on Postgres: each command is applied by one.
        self._claim = (
            r("SELECT 1 FROM harvest_commands WHERE id = ? AND applied_at IS NULL")
            + dialect.skip_locked
        )
        self._claim_row = (
            r(
                "SELECT id, command_id, kind, args, submitted_at FROM harvest_commands "
                "WHERE id = ? AND applied_at IS NULL"
            )
            + dialect.skip_locked
        )
        self.finish_sql = r(
            "UPDATE harvest_commands SET applied_at = ?, reply = ?, exec_id = ? "
            "WHERE id = ? AND applied_at IS NULL"
        )
        """Mark a command applied (if no one did first): applied_at, reply, exec_id, id."""
        # A prefix function, not LIKE: the shared text holds no literal %.
        refused = (
            dialect.prefix.format(column="reply", n=len(REFUSED_PREFIX))
            + f" = '{REFUSED_PREFIX}'"
        )
        self._purge = r(
            "DELETE FROM harvest_commands WHERE id IN (SELECT id FROM harvest_commands "
            "WHERE applied_at IS NOT NULL AND (applied_at < ? OR (applied_at < ? AND "
            f"{refused})) ORDER BY applied_at LIMIT ?)"
        )
        self._withdraw = r(
            "DELETE FROM harvest_commands WHERE command_id = ? AND applied_at IS NULL"
        )
        self._settle_refused = r(
            "DELETE FROM harvest_commands WHERE command_id = ? "
            f"AND applied_at IS NOT NULL AND {refused}"
        )

    def refuse_held(
        self, conn: Executes, command_id: str, kind: str, args: str
    ) -> None:
        """Raise when another command already holds `command_id` (see `refuse_other`)."""
        held = conn.execute(self._held, (command_id,)).fetchone()
        refuse_other(
            command_id, kind, args, None if held is None else (held[0], held[1])
        )

    def reply(self, conn: Executes, command_id: str) -> tuple[bool, str | None] | None:
        """(applied, reply JSON) of a queued command; None when no row has this id."""
        row = conn.execute(self._reply, (command_id,)).fetchone()
        return None if row is None else (bool(row[0]), row[1])

    def withdraw(self, conn: Executes, command_id: str) -> bool:
        """Delete a command no one applied yet; False when no queued row went.

        An applied command keeps its row (and reply): its effect happened. On
        Postgres a worker applying it holds its row: the delete waits, then
        finds it applied and leaves it.
        """
        return conn.execute(self._withdraw, (command_id,)).rowcount > 0

    def settle_refused(self, conn: Executes, command_id: str) -> bool:
        """Delete a refused command whose reply its client has read; False when it is not one."""
        return conn.execute(self._settle_refused, (command_id,)).rowcount > 0

    def pending(self, conn: Executes, limit: int) -> list[CommandRecord]:
        """Unapplied commands, oldest first (the partial index holds only these)."""
        rows = conn.execute(self._pending, (limit,)).fetchall()
        return [command_record(row) for row in rows]

    def claim_row(self, conn: Executes, row_id: int) -> Rows:
        """`claim`, the cursor's row the command's own (`command_record` reads it)."""
        return conn.execute(self._claim_row, (row_id,))

    def claim(self, conn: Executes, row_id: int) -> Rows:
        """Take the command row: a row in the cursor when it was still waiting, now this transaction's.

        Not fetched here: on Postgres's pipelined connection the statement
        waits in the pipeline until a read, so one that follows travels with it.
        """
        return conn.execute(self._claim, (row_id,))

    def finish(
        self,
        conn: Executes,
        row_id: int,
        reply_json: str,
        exec_id: str | None,
        now: datetime,
    ) -> None:
        """Mark a command applied with its reply and the run it touched."""
        conn.execute(self.finish_sql, (micros(now), reply_json, exec_id, row_id))

    def purge_applied(
        self, conn: Executes, cutoff: datetime, refused_cutoff: datetime, limit: int
    ) -> int:
        """Delete up to `limit` commands applied before `cutoff` (refused: before `refused_cutoff`)."""
        args = (micros(cutoff), micros(refused_cutoff), limit)
        return int(self._dialect.settled(conn, self._purge, args).rowcount)


SQLITE_COMMANDS = Commands(SQLITE)
POSTGRES_COMMANDS = Commands(POSTGRES)
