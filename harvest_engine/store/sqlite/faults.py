"""The translator from SQLite's driver and OS failures to harvest's typed errors.

Every public call of the store, the reader and the runtime passes through
this store's `Boundary` (store/boundary.py; classes are wrapped by `guard_public_methods`), and the
write-transaction helper translates what its body or its COMMIT raised. So no
``sqlite3.*``, ``OSError``, ``RecursionError``, ``OverflowError`` or
``UnicodeError`` reaches a caller: it arrives as `StorageError` (the file
could not be written or read), `DatabaseCorrupt` (what was read is damaged),
or `DatabaseLocked` (another process holds SQLite's own lock past the busy
timeout), with the original as ``__cause__``.
"""

from __future__ import annotations

import sqlite3

from harvest_engine.errors import (
    DatabaseCorrupt,
    DatabaseLocked,
    HarvestError,
    StorageError,
)
from harvest_engine.store.boundary import NEUTRAL, Boundary, translate_neutral

# Primary result codes (the low byte of an extended code).
_STORAGE_CODES = {
    sqlite3.SQLITE_FULL: "disk full",
    sqlite3.SQLITE_IOERR: "I/O error",
    sqlite3.SQLITE_READONLY: "read-only file or file system",
    sqlite3.SQLITE_CANTOPEN: "cannot open the file",
    sqlite3.SQLITE_PERM: "permission denied",
    sqlite3.SQLITE_AUTH: "permission denied",
    sqlite3.SQLITE_NOMEM: "out of memory",
    sqlite3.SQLITE_NOLFS: "the file system cannot hold a file this large",
    sqlite3.SQLITE_TOOBIG: "a value too large for the file",
    sqlite3.SQLITE_PROTOCOL: "the file's locking protocol failed",
}
_CORRUPT_CODES = {
    sqlite3.SQLITE_CORRUPT,
    sqlite3.SQLITE_NOTADB,
    sqlite3.SQLITE_FORMAT,
    sqlite3.SQLITE_SCHEMA,
    sqlite3.SQLITE_MISMATCH,
    sqlite3.SQLITE_CONSTRAINT,
    sqlite3.SQLITE_ERROR,  # "no such table/column": a table or column was dropped
}
_BUSY_CODES = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
_READONLY_ROLLBACK = sqlite3.SQLITE_READONLY | (3 << 8)  # a hot journal, read-only

TRANSLATED: tuple[type[BaseException], ...] = (sqlite3.Error, *NEUTRAL)
"""What `translate` turns into a typed error; anything else passes unchanged."""


def translate(exc: BaseException, path: str) -> BaseException:
    """The typed error that stands for `exc` met on the file at `path` (or `exc` itself).

    Args:
        exc: what the driver, the OS or a decoder raised.
        path: the database file, for the message.
    """
    if isinstance(exc, HarvestError) or not isinstance(exc, TRANSLATED):
        return exc
    if isinstance(exc, sqlite3.Error):
        return _from_sqlite(exc, path)
    if isinstance(exc, OverflowError) and "SQLite INTEGER" in str(exc):
        return StorageError(path=path, reason=f"a value the file cannot store ({exc})")
    if isinstance(exc, UnicodeEncodeError):
        return StorageError(path=path, reason=f"text the file cannot store ({exc})")
    return translate_neutral(exc, path)


def _from_sqlite(exc: sqlite3.Error, path: str) -> HarvestError:
    code = getattr(exc, "sqlite_errorcode", None)
    primary = None if code is None else code & 0xFF
    text = str(exc)
    if code == _READONLY_ROLLBACK:
        return StorageError(
            path=path,
            reason="a writer that stopped mid-transaction left a hot journal; open the "
            "file with SqliteRuntime once to roll it back",
        )
    if primary in _BUSY_CODES:
        return DatabaseLocked(path=path, lock_path=path)
    if primary in _STORAGE_CODES:
        return StorageError(path=path, reason=f"{_STORAGE_CODES[primary]}: {text}")
    if primary is None and text.startswith("Could not decode to UTF-8"):
        return DatabaseCorrupt(path=path, reason=f"text is not UTF-8 ({text})")
    if primary is None and isinstance(exc, sqlite3.OperationalError):
        return StorageError(path=path, reason=text)
    if primary in _CORRUPT_CODES or isinstance(exc, sqlite3.DatabaseError):
        return DatabaseCorrupt(path=path, reason=text)
    return StorageError(path=path, reason=text)


BOUNDARY = Boundary(TRANSLATED, translate)
"""SQLite's boundary; `guard_public_methods` is its class decorator."""
guard_public_methods = BOUNDARY.guard_public_methods
