"""Give a fresh WAL file its full size at open, so commits overwrite it in place.

SQLite deletes the WAL when the last connection closes, so every open of
a writer starts with an empty one that grows frame by frame: each commit
then also extends the file, and its fdatasync must flush the new size too.
Once the WAL has wrapped (a checkpoint, then writes from its start again),
commits overwrite blocks already there and cost about half as much on the
disks measured (`bench/RESULTS.md`, the disk's floor). Preallocating the WAL
at open gives a new process that steady state from its first commit; a
long-lived process would reach it by itself after about 1,000 pages.

The WAL grows without touching the database: a transaction that writes
more pages than its cache holds spills them to the WAL as uncommitted
frames, and a ROLLBACK leaves those frames where they are, invisible to
every reader and to recovery (no commit frame follows them). The next commit
writes its frames over them.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

_FRAME_HEADER = 24  # bytes before each page in a WAL frame
_SPILL_CACHE_PAGES = 16  # a cache this small spills nearly every page written


def wal_target_bytes(conn: sqlite3.Connection) -> int:
    """The size a WAL reaches before the automatic checkpoint lets it wrap."""
    page_size, frames = _wrap_geometry(conn)
    return frames * (page_size + _FRAME_HEADER)


def _wrap_geometry(conn: sqlite3.Connection) -> tuple[int, int]:
    """The page size, and the frames a WAL holds when the autocheckpoint wraps it."""
    page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    pages = int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
    return page_size, pages + 64


def preallocate_wal(conn: sqlite3.Connection, db_path: Path) -> bool:
    """Grow `db_path`'s WAL to its wrap size when it is smaller; True when it grew.

    Only an optimisation: a failure (a full disk, say) rolls back and
    leaves the file as it was, and the open goes on with a WAL that grows
    as it is used.
    """
    wal = Path(f"{db_path}-wal")
    page_size, frames = _wrap_geometry(conn)
    target = frames * (page_size + _FRAME_HEADER)
    if _size(wal) >= target or conn.in_transaction:
        return False
    # The last pages written stay in the cache, unspilled: write a few more.
    rows = frames + 4 * _SPILL_CACHE_PAGES
    cache_size = int(conn.execute("PRAGMA cache_size").fetchone()[0])
    try:
        conn.execute(f"PRAGMA cache_size = {_SPILL_CACHE_PAGES}")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TABLE harvest_wal_preallocation (pad BLOB)")
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            "INSERT INTO harvest_wal_preallocation SELECT zeroblob(?) FROM n",
            (rows, page_size * 3 // 4),  # one row per page, no overflow page
        )
    except sqlite3.Error:
        pass  # no room for the pad: the WAL grows as it is used instead
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.execute(f"PRAGMA cache_size = {cache_size}")
    return _size(wal) >= target


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
