"""Read-only connections for SqliteReader: mode=ro, no lock, refusals, snapshots."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from harvest_engine.errors import NotAHarvestDatabase
from harvest_engine.store.sql.payload_columns import settle_codec
from harvest_engine.store.sqlite.connection import connect
from harvest_engine.store.sqlite.migrations import (
    check_application_mark,
    check_supported,
    read_version,
    table_names,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from harvest_engine.codecs import PayloadCodec

# The tables whose columns the reader maps by name, so a file of an older
# schema reads a missing column as NULL (guide §8).
VERSIONED_TABLES = ("harvest_executions",)

ReadConnection = sqlite3.Connection
"""The connection type, named for modules that may not import sqlite3 (DESIGN)."""


def open_read_only(
    path: str | Path, *, codec: PayloadCodec | None = None
) -> tuple[sqlite3.Connection, int]:
    """Open a harvest file read-only without any lock; returns the connection and its version.

    Nothing here writes: no pragma that changes the file, no schema step, no
    lock file. The writer's WAL lets this connection read beside it.

    Raises:
        NotAHarvestDatabase: no such file, not SQLite, or not harvest's.
        SchemaTooNew: written by a newer harvest.
    """
    target = Path(path)
    if not target.is_file():
        reason = "it is a folder" if target.is_dir() else "no such file"
        raise NotAHarvestDatabase(path=str(path), reason=reason)
    conn = connect(target, read_only=True, codec=codec)
    try:
        version = read_version(conn, str(path))
        if version == 0:
            raise NotAHarvestDatabase(path=str(path), reason="it has no harvest schema")
        check_supported(version, str(path))
        check_application_mark(conn, str(path))
        if "harvest_meta" in table_names(conn):
            settle_codec(conn, str(path), codec, write=False)
    except BaseException:
        conn.close()
        raise
    return conn, version


def table_columns(conn: sqlite3.Connection, table: str) -> frozenset[str]:
    """The column names a table has in this file (empty if it has no such table)."""
    return frozenset(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))


def data_version(conn: sqlite3.Connection) -> int:
    """SQLite's data_version: it changes when another connection commits."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """Hold one read transaction, so every read inside sees the same commit (reentrant)."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")
