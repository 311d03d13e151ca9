"""Where a simulation's durable state lives: a SQLite file, or a Postgres database.

A backend opens the real store the `SimulatedStore` wraps (again after each
simulated crash: only what committed is there) and the command queue the
simulated clients write to, as a client process would.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from harvest_engine.store.sqlite.client_queue import CommandQueue
from harvest_engine.store.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.store.protocol import DurableStore

# The worker id of every (re)opened Postgres store: a reopen under the same
# id frees the dead worker's claims at once, as a SQLite reopen does.
SIM_WORKER = "harvest-sim"


class ClientQueue(Protocol):
    """The client side of a store's command queue."""

    def submit(self, command_id: str, kind: str, args: str, now: datetime) -> bool:
        """Queue a command; False when its id was queued already."""
        ...

    def reply(self, command_id: str) -> tuple[bool, str | None] | None:
        """(applied, reply JSON) of a command; None when no row has this id."""
        ...

    def close(self) -> None:
        """Close the connection."""
        ...


class Backend(Protocol):
    """Opens the store and the client queue of one simulation's database."""

    def open_store(self, now: datetime) -> DurableStore:
        """Open the store (a fresh process's view: what committed)."""
        ...

    def open_queue(self) -> ClientQueue:
        """Open the clients' command queue."""
        ...

    def close(self) -> None:
        """Remove what the backend made (a temporary folder)."""
        ...


class SqliteFile:
    """A SQLite file in `directory`, or in a fresh temporary folder removed at the end."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self._owned = directory is None
        self.folder = (
            Path(tempfile.mkdtemp(prefix="harvest-sim-", dir=_fast_tmp()))
            if directory is None
            else Path(directory)
        )
        self.path = self.folder / "sim.db"

    def open_store(self, now: datetime) -> DurableStore:
        """Lock and open the file (the reopen after a crash reclaims its claims)."""
        return SqliteStore.open(self.path, now=now)

    def open_queue(self) -> ClientQueue:
        """The file's command queue, as a client process opens it."""
        return CommandQueue.open(self.path)

    def close(self) -> None:
        """Remove the temporary folder (a given directory stays)."""
        if self._owned:
            shutil.rmtree(self.folder, ignore_errors=True)


class PostgresDatabase:
    """An empty Postgres database (the `postgres` extra); each reopen is the same worker."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    def open_store(self, now: datetime) -> DurableStore:
        """Connect a worker; the same worker id frees a crashed one's claims."""
        from harvest_engine.store.postgres.store import PostgresStore  # noqa: PLC0415

        return PostgresStore.connect(self.dsn, worker_id=SIM_WORKER)

    def open_queue(self) -> ClientQueue:
        """The database's command queue, as a client process connects to it."""
        from harvest_engine.store.postgres.client_queue import (  # noqa: PLC0415
            PostgresCommandQueue,
        )

        return PostgresCommandQueue.connect(self.dsn)

    def close(self) -> None:
        """Nothing to remove: the caller owns the database."""


def _fast_tmp() -> str | None:
    """A memory-backed folder for the database when there is one (fsync is free there)."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() else None
