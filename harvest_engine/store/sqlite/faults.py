"""The one translator from driver and OS failures to harvest's typed errors, and the boundary that applies it.

Every public call of the store, the reader and the runtime passes through
`boundary` (their classes are wrapped by `guard_public_methods`), and the
write-transaction helper translates what its body or its COMMIT raised. So no
``sqlite3.*``, ``OSError``, ``RecursionError``, ``OverflowError`` or
``UnicodeError`` reaches a caller: it arrives as `StorageError` (the file
could not be written or read), `DatabaseCorrupt` (what was read is damaged),
or `DatabaseLocked` (another process holds SQLite's own lock past the busy
timeout), with the original as ``__cause__``.
"""

from __future__ import annotations

import functools
import inspect
import sqlite3
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from harvest_engine.errors import (
    DatabaseCorrupt,
    DatabaseLocked,
    HarvestError,
    StorageError,
)
from harvest_engine.store.rows import UnreadableRow

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator

T = TypeVar("T")

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

TRANSLATED: tuple[type[BaseException], ...] = (
    UnreadableRow,
    sqlite3.Error,
    OSError,
    RecursionError,
    OverflowError,
    UnicodeError,
    MemoryError,
)
"""What `translate` turns into a typed error; anything else passes unchanged."""


def translate(exc: BaseException, path: str) -> BaseException:
    """The typed error that stands for `exc` met on the file at `path` (or `exc` itself).

    Args:
        exc: what the driver, the OS or a decoder raised.
        path: the database file, for the message.
    """
    if isinstance(exc, HarvestError) or not isinstance(exc, TRANSLATED):
        return exc
    if isinstance(exc, UnreadableRow):
        return DatabaseCorrupt(path=path, reason=str(exc))
    if isinstance(exc, sqlite3.Error):
        return _from_sqlite(exc, path)
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc) or type(exc).__name__
        if exc.filename is not None and str(exc.filename) != path:
            reason = f"{exc.filename}: {reason}"
        return StorageError(path=path, reason=reason)
    if isinstance(exc, MemoryError):
        return StorageError(path=path, reason="out of memory")
    if isinstance(exc, UnicodeEncodeError):
        return StorageError(path=path, reason=f"text the file cannot store ({exc})")
    if isinstance(exc, OverflowError) and "SQLite INTEGER" in str(exc):
        return StorageError(path=path, reason=f"a value the file cannot store ({exc})")
    if isinstance(exc, RecursionError):
        return DatabaseCorrupt(path=path, reason="a stored value is nested too deep")
    return DatabaseCorrupt(
        path=path, reason=f"a stored value cannot be read ({type(exc).__name__}: {exc})"
    )


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


@contextmanager
def boundary(path: str) -> Iterator[None]:
    """Raise the typed error for any driver, OS or decoding failure inside the block."""
    try:
        yield
    except TRANSLATED as exc:
        raise translate(exc, path) from exc


def _path_of(owner: Any, args: tuple[Any, ...]) -> str:
    if isinstance(owner, type):  # a classmethod: open(path, ...)
        return str(args[0]) if args else "?"
    path = getattr(owner, "path", None)
    if path is None:
        path = getattr(getattr(owner, "store", None), "path", "?")
    return str(path)


def _wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
    # try/except in each wrapper, not `with boundary(...)`: a public call pays
    # for a try block only, and the path is looked up only when translating.
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(owner: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(owner, *args, **kwargs)
            except TRANSLATED as exc:
                raise translate(exc, _path_of(owner, args)) from exc

        return run_async
    if inspect.isasyncgenfunction(fn):

        @functools.wraps(fn)
        async def run_async_gen(
            owner: Any, *args: Any, **kwargs: Any
        ) -> AsyncIterator[Any]:
            try:
                async for item in fn(owner, *args, **kwargs):
                    yield item
            except TRANSLATED as exc:
                raise translate(exc, _path_of(owner, args)) from exc

        return run_async_gen
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def run_gen(owner: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from fn(owner, *args, **kwargs)
            except TRANSLATED as exc:
                raise translate(exc, _path_of(owner, args)) from exc

        return run_gen

    @functools.wraps(fn)
    def run(owner: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(owner, *args, **kwargs)
        except TRANSLATED as exc:
            raise translate(exc, _path_of(owner, args)) from exc

    return run


def guard_public_methods(*, skip: tuple[str, ...] = ()) -> Callable[[type[T]], type[T]]:
    """A class decorator: every public method (and classmethod) raises only typed errors.

    Args:
        skip: methods that translate on their own (a context manager such as
            the write-transaction helper, whose failures come at exit).
    """

    def decorate(cls: type[T]) -> type[T]:
        for name, member in list(vars(cls).items()):
            if name.startswith("_") or name in skip:
                continue
            if isinstance(member, classmethod):
                setattr(cls, name, classmethod(_wrap(member.__func__)))
            elif inspect.isfunction(member):
                setattr(cls, name, _wrap(member))
        return cls

    return decorate
