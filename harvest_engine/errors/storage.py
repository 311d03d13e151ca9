"""Errors about the database file itself: the environment, not the caller.

Locked, too new, not ours, closed, unwritable or damaged, and the imports a
file refuses; the GUI answers these with "here is what to do".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors.base import SqliteError, _run_id

if TYPE_CHECKING:
    from harvest_engine.states import ExecutionId


class DatabaseLocked(SqliteError):
    """Another runtime (in this or another process) holds the writer lock."""

    _template = (
        "{path} is held by another writer{held_by} (lock file {lock_path}); open it "
        "read-only with SqliteReader, or stop the other process"
    )

    def __init__(
        self, *, path: str, lock_path: str, holder_pid: int | None = None
    ) -> None:
        super().__init__(
            path=path,
            lock_path=lock_path,
            holder_pid=holder_pid,
            held_by="" if holder_pid is None else f" (process {holder_pid})",
        )


class SchemaTooNew(SqliteError):
    """The file was written by a newer harvest; it is left untouched."""

    _template = (
        "{path} has schema version {found}, newer than this harvest supports "
        "({supported}); upgrade harvest to open it"
    )

    def __init__(self, *, path: str, found: int, supported: int) -> None:
        super().__init__(path=path, found=found, supported=supported)


class NotAHarvestDatabase(SqliteError):
    """The file is not a harvest database (or is not SQLite at all)."""

    _template = "{path} is not a harvest database: {reason}"

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(path=path, reason=reason)


class DatabaseClosed(SqliteError):
    """The runtime or reader was closed; open the file again to use it."""

    _template = "{path} is closed: open it again to use it"

    def __init__(self, *, path: str) -> None:
        super().__init__(path=path)


class StorageError(SqliteError):
    """The file could not be written or read: disk full, I/O error, read-only, permission.

    The operating system's error (or the driver's) is the ``__cause__``. Nothing
    half-done stays: the transaction that met it is rolled back, the runtime
    stays usable, and the same call succeeds once the cause is gone.
    """

    _template = "{path}: storage failed ({reason})"

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(path=path, reason=reason)


class DatabaseCorrupt(SqliteError):
    """A read met a damaged file or row that `Stored.Unreadable` cannot stand for.

    A single-run read (describe, history, outcome) of a damaged run raises it;
    a listing flags the row (`ExecutionSummary.damaged`) instead, so one bad
    row never fails a page.
    """

    _template = "{path} is damaged: {reason}"

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(path=path, reason=reason)


class ExecutionExists(SqliteError):
    """An imported history names a run this database already holds; nothing was written."""

    _template = "execution {exec_id} already exists in {target}; nothing was imported"

    def __init__(self, *, exec_id: ExecutionId | str, target: str = "") -> None:
        super().__init__(exec_id=_run_id(exec_id), target=target)


class InvalidHistoryFile(SqliteError, ValueError):
    """A history file to import is not one closed run's history; nothing was written."""

    _template = "{path} cannot be imported: {reason}"

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(path=path, reason=reason)


class CodecRequired(SqliteError):
    """The file's payloads are encoded and no codec (or not the right one) was given.

    Open it again with ``codec=`` (the CLI and the GUI: ``--codec module:attr``)
    naming the codec it was written with; nothing was read or changed.
    """

    _template = "{path}: {reason}"

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(path=path, reason=reason)
