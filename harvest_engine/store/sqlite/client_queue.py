"""A client's connection to a served file: it queues command rows and reads replies, nothing else.

It takes no writer lock and runs no pragma that changes the file: the file
must already be a harvest file of this schema version (a runtime created or
upgraded it). Each command is one short transaction, so a client killed
mid-write leaves its command wholly queued or absent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors import NotAHarvestDatabase
from harvest_engine.store.sqlite import commands, lock, readonly
from harvest_engine.store.sqlite.connection import ClosedConnection, connect
from harvest_engine.store.sqlite.faults import guard_public_methods
from harvest_engine.store.sqlite.migrations import table_names
from harvest_engine.store.sqlite.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    import sqlite3
    from datetime import datetime
    from pathlib import Path


@guard_public_methods()
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

    def submit(self, command_id: str, kind: str, args: str, now: datetime) -> bool:
        """Queue one command (one short transaction); False when its id was queued already.

        Raises:
            ValueError: the id names a different command (nothing is queued).
        """
        return commands.submit(self._conn, command_id, kind, args, now)

    def reply(self, command_id: str) -> tuple[bool, str | None] | None:
        """(applied, reply JSON) of a command; None when no row has this id."""
        return commands.reply(self._conn, command_id)

    def withdraw(self, command_id: str) -> bool:
        """Remove the command if no one applied it yet; False when no queued row went."""
        return commands.withdraw(self._conn, command_id)

    def settle_refused(self, command_id: str) -> bool:
        """Remove a refused command once its reply was read; False when it is not one."""
        return commands.settle_refused(self._conn, command_id)

    def served_ago(self) -> float | None:
        """Seconds since a serving process last beat; None when none ever served the file."""
        return lock.served_ago(self.path)

    def data_version(self) -> int:
        """Changes whenever another connection (the serving process) commits."""
        return readonly.data_version(self._conn)

    def close(self) -> None:
        """Close the connection (safe to call twice)."""
        self._conn.close()
        self._conn = ClosedConnection(self.path)  # type: ignore[assignment]
