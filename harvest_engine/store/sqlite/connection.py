"""connect(): the one place that opens SQLite connections and sets every pragma."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import NoReturn

from harvest_engine.errors import DatabaseClosed

BUSY_TIMEOUT_MS = 5000


def connect(
    path: str | Path, *, read_only: bool = False, uri: bool = False
) -> sqlite3.Connection:
    """Open a connection with harvest's pragmas.

    Args:
        path: a file path, or a URI when `uri` is true (in-memory databases).
        read_only: open with ``mode=ro`` (the reader); no pragma that writes.
        uri: `path` is already a ``file:`` URI.
    """
    if read_only:
        target = f"file:{Path(path).resolve()}?mode=ro"
        conn = sqlite3.connect(
            target, uri=True, isolation_level=None, check_same_thread=False
        )
    else:
        conn = sqlite3.connect(
            str(path), uri=uri, isolation_level=None, check_same_thread=False
        )
    # A monitoring reader and the writer coexist: wait for the other side's
    # short transactions instead of failing with SQLITE_BUSY (guide §11).
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def apply_writer_pragmas(conn: sqlite3.Connection) -> None:
    """WAL and FULL sync for the writer, set only once the file is known to be ours.

    WAL lets readers run beside the writer; FULL fsyncs every commit, which
    the crash tests depend on. Switching to WAL rewrites the file
    header, so a foreign or newer file must be refused before this runs.
    """
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")


def remove_database_files(path: Path) -> None:
    """Remove a database file an open created and then gave up on, with its WAL and SHM.

    Only for a file the failed open itself made: an open that could not
    finish (a full disk, a refusal) leaves no half-made file behind.
    """
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            Path(f"{path}{suffix}").unlink()


class ClosedConnection:
    """Stands in for a closed connection: any use raises DatabaseClosed, not sqlite3's error."""

    def __init__(self, path: str) -> None:
        self._path = path

    def __getattr__(self, name: str) -> NoReturn:
        raise DatabaseClosed(path=self._path)

    def close(self) -> None:
        """Closing again is harmless."""

    def __repr__(self) -> str:
        return f"<closed connection to {self._path}>"
