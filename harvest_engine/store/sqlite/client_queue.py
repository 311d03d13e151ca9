"""A client's connection to a served file: it queues command rows and reads replies, nothing else.

It takes no writer lock and runs no pragma that changes the file: the file
must already be a harvest file of this schema version (a runtime created or
upgraded it). Each command is one short transaction, so a client killed
mid-write leaves its command wholly queued or absent.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING

from harvest_engine.errors import NotAHarvestDatabase
from harvest_engine.store.sql.commands import SQLITE_COMMANDS
from harvest_engine.store.sqlite import lock, readonly
from harvest_engine.store.sqlite.connection import (
    BUSY_TIMEOUT_MS,
    ClosedConnection,
    connect,
)
from harvest_engine.store.sqlite.faults import guard_public_methods
from harvest_engine.store.sqlite.migrations import table_names
from harvest_engine.store.sqlite.schema import SCHEMA_VERSION
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime
    from pathlib import Path

    from harvest_engine.codecs import PayloadCodec


# A queued command's commit needs no fsync of its own: nobody is told of
# the command before its reply, and the serving process commits the reply
# with synchronous=FULL, whose fsync of the WAL takes the command's frames
# with it (they come before the reply's in the file). A power loss before
# that loses a command no caller was answered for, as a client killed
# before queueing it would; a retry under its id queues it again. Saved:
# one fsync on every client round trip. A withdrawal is synced (`withdraw`).
QUEUE_SYNCHRONOUS = "NORMAL"

# While the serving process holds the write lock (a decision commits), the
# client's BEGIN IMMEDIATE waits in steps of its own: SQLite's busy handler
# sleeps a whole millisecond first, then 2, 5, ... ms, though the server's
# transactions last a fraction of one. The steps grow to LOCK_STEP_CAP.
LOCK_STEP_FIRST = 0.00005
LOCK_STEP_CAP = 0.001


@guard_public_methods()
class CommandQueue:
    """The command table of one file, as a client in another process sees it."""

    def __init__(self, path: str, conn: sqlite3.Connection) -> None:
        """Use `CommandQueue.open(path)`."""
        self.path = path
        self._conn = conn

    @classmethod
    def open(
        cls, path: str | Path, *, codec: PayloadCodec | None = None
    ) -> CommandQueue:
        """Open the file's command queue.

        Raises:
            NotAHarvestDatabase: no such file, not harvest's, or a schema
                older than the command queue (open it once with a runtime).
            SchemaTooNew: written by a newer harvest.
        """
        probe, version = readonly.open_read_only(path, codec=codec)
        try:
            has_queue = "harvest_commands" in table_names(probe)
        finally:
            probe.close()
        if version < SCHEMA_VERSION or not has_queue:
            raise NotAHarvestDatabase(
                path=str(path),
                reason=f"its schema (version {version}) has no command queue; open it "
                "once with SqliteRuntime (a serving process does) to upgrade it",
            )
        conn = connect(path, codec=codec)
        conn.execute(f"PRAGMA synchronous = {QUEUE_SYNCHRONOUS}")
        return cls(str(path), conn)

    def submit(
        self,
        command_id: str,
        kind: str,
        args: str,
        now: datetime,
        run: str | None = None,
    ) -> bool:
        """Queue one command (one short transaction); False when its id was queued already.

        The row is wholly queued or absent. A command id already queued (a
        retry) queues nothing: the row stays the first call's, so the command
        is applied once. `run` (the run it signals) is for a Postgres worker's
        notice: a file has one applier, which reads its queue.

        Raises:
            ValueError: the id names a different command (nothing is queued).
        """
        del run

        def queue(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                SQLITE_COMMANDS.insert, (command_id, kind, args, micros(now))
            )
            if cursor.rowcount > 0:
                return True
            SQLITE_COMMANDS.refuse_held(conn, command_id, kind, args)
            return False

        return self._short(queue)

    def reply(self, command_id: str) -> tuple[bool, str | None] | None:
        """(applied, reply JSON) of a command; None when no row has this id."""
        return SQLITE_COMMANDS.reply(self._conn, command_id)

    def withdraw(self, command_id: str) -> bool:
        """Remove the command if no one applied it yet; False when no queued row went.

        Synced: a withdrawal the caller was told of must not come undone.
        """
        self._conn.execute("PRAGMA synchronous = FULL")
        try:
            return self._short(lambda conn: SQLITE_COMMANDS.withdraw(conn, command_id))
        finally:
            self._conn.execute(f"PRAGMA synchronous = {QUEUE_SYNCHRONOUS}")

    def settle_refused(self, command_id: str) -> bool:
        """Remove a refused command once its reply was read; False when it is not one."""
        return self._short(
            lambda conn: SQLITE_COMMANDS.settle_refused(conn, command_id)
        )

    def served_ago(self) -> float | None:
        """Seconds since a serving process last beat; None when none ever served the file."""
        return lock.served_ago(self.path)

    def data_version(self) -> int:
        """Changes whenever another connection (the serving process) commits."""
        return readonly.data_version(self._conn)

    def _short(self, write: Callable[[sqlite3.Connection], bool]) -> bool:
        """`write` in one short transaction of its own: wholly done or not at all."""
        conn = self._conn
        begin_immediate(conn)
        try:
            done = write(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return done

    def close(self) -> None:
        """Close the connection (safe to call twice)."""
        self._conn.close()
        self._conn = ClosedConnection(self.path)  # type: ignore[assignment]


def begin_immediate(conn: sqlite3.Connection) -> None:
    """BEGIN IMMEDIATE, waiting for another writer in steps of LOCK_STEP_FIRST up to LOCK_STEP_CAP.

    Gives up after the connection's usual BUSY_TIMEOUT_MS with SQLite's own
    busy error, as its handler would.
    """
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        step = LOCK_STEP_FIRST
        give_up = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                busy = getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY
                if not busy or time.monotonic() >= give_up:
                    raise
            time.sleep(step)
            step = min(step * 2, LOCK_STEP_CAP)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
