"""connect(): the one place that opens SQLite connections and sets every pragma."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from harvest_engine.errors import DatabaseClosed
from harvest_engine.store.sqlite.codec_connection import CodecConnection

if TYPE_CHECKING:
    from harvest_engine.codecs import PayloadCodec

BUSY_TIMEOUT_MS = 5000

# The page size of a file harvest creates. Its writes are many small
# transactions, each dirtying 4-10 b-tree pages (a row, its indexes, an event,
# a task) with a few dozen bytes changed in each; every dirty page goes into
# the WAL whole and is checksummed, written and fsynced whole. With 1 KiB
# pages a commit writes a quarter of the bytes of SQLite's default 4 KiB:
# about 12% less time per activity of a long history and per run driven
# alone on the bench machine (bench/PERF-NOTES.md). Reads of big payloads
# follow more overflow pages, which the history and listing reads do not
# notice. A file that exists keeps the page size it was made with.
NEW_FILE_PAGE_SIZE = 1024


def connect(
    path: str | Path,
    *,
    read_only: bool = False,
    uri: bool = False,
    codec: PayloadCodec | None = None,
) -> sqlite3.Connection:
    """Open a connection with harvest's pragmas.

    Args:
        path: a file path, or a URI when `uri` is true (in-memory databases).
        read_only: open with ``mode=ro`` (the reader); no pragma that writes.
        uri: `path` is already a ``file:`` URI.
        codec: encode and decode payload columns with it (CodecConnection);
            None keeps the plain sqlite3 connection.
    """
    factory = sqlite3.Connection if codec is None else CodecConnection
    if read_only:
        target = f"file:{Path(path).resolve()}?mode=ro"
        conn = sqlite3.connect(
            target,
            uri=True,
            isolation_level=None,
            check_same_thread=False,
            factory=factory,
        )
    else:
        conn = sqlite3.connect(
            str(path),
            uri=uri,
            isolation_level=None,
            check_same_thread=False,
            factory=factory,
        )
    if codec is not None and isinstance(conn, CodecConnection):
        conn.use_codec(codec)
    # A monitoring reader and the writer coexist: wait for the other side's
    # short transactions instead of failing with SQLITE_BUSY (guide §11).
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def apply_writer_pragmas(conn: sqlite3.Connection, *, empty: bool = False) -> None:
    """WAL and FULL sync for the writer, set only once the file is known to be ours.

    WAL lets readers run beside the writer; FULL fsyncs every commit, which
    the crash tests depend on. Switching to WAL rewrites the file
    header, so a foreign or newer file must be refused before this runs.
    An `empty` database (no schema yet) first gets NEW_FILE_PAGE_SIZE,
    which SQLite can only set before the first table and the switch to WAL.
    """
    if empty:
        conn.execute(f"PRAGMA page_size = {NEW_FILE_PAGE_SIZE}")
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
