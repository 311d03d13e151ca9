"""A client's connection to a served file: it queues command rows and reads replies, nothing else.

It takes no writer lock and runs no pragma that changes the file: the file
must already be a harvest file of this schema version (a runtime created or
upgraded it). Each command is one short transaction, so a client killed
mid-write leaves its command wholly queued or absent.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, NoReturn

from harvest_engine.errors import DatabaseLocked, NotAHarvestDatabase
from harvest_engine.store.sqlite import commands, readonly
from harvest_engine.store.sqlite.connection import ClosedConnection, connect
from harvest_engine.store.sqlite.migrations import table_names
from harvest_engine.store.sqlite.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path


class CommandQueue:
    """The command table of one file, as a client in another process sees it."""

    def __init__(self, path: str, conn: sqlite3.Connection) -> None:
        """Use `CommandQueue.open(path)`."""
        self.path = path
        self._conn = conn

    @classmethod
    def open(cls, path: str | Path) -> CommandQueue:
        """Open the file's command queue.

        Raises:
            NotAHarvestDatabase: no such file, not harvest's, or a schema
                older than the command queue (open it once with a runtime).
            SchemaTooNew: written by a newer harvest.
        """
        probe, version = readonly.open_read_only(path)
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
        return cls(str(path), connect(path))

    def submit(self, command_id: str, kind: str, args: str, now: datetime) -> None:
        """Queue one command (one short transaction)."""
        try:
            commands.submit(self._conn, command_id, kind, args, now)
        except sqlite3.Error as exc:
            self._fail(exc)

    def reply(self, command_id: str) -> tuple[bool, str | None] | None:
        """(applied, reply JSON) of a command; None when no row has this id."""
        try:
            return commands.reply(self._conn, command_id)
        except sqlite3.Error as exc:
            self._fail(exc)

    def data_version(self) -> int:
        """Changes whenever another connection (the serving process) commits."""
        try:
            return readonly.data_version(self._conn)
        except sqlite3.Error as exc:
            self._fail(exc)

    def close(self) -> None:
        """Close the connection (safe to call twice)."""
        self._conn.close()
        self._conn = ClosedConnection(self.path)  # type: ignore[assignment]

    def _fail(self, exc: sqlite3.Error) -> NoReturn:
        """A typed error for a failed queue read or write (nothing was queued)."""
        text = str(exc)
        if "locked" in text or "busy" in text:
            raise DatabaseLocked(path=self.path, lock_path=self.path + ".lock") from exc
        raise NotAHarvestDatabase(
            path=self.path, reason=f"the command queue failed: {text}"
        ) from exc
