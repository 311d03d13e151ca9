"""Postgres failures to harvest's typed errors, and the boundary that applies them.

No psycopg error reaches a caller of the store: a lost connection, a server
that went away, a full disk on the server, a deadlock between workers all
arrive as `StorageError` naming the database (its password hidden), with the
driver's error as ``__cause__``. The runtime stays usable: the store
reconnects on its next call.
"""

from __future__ import annotations

import functools
import inspect
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg

from harvest_engine.errors import DatabaseCorrupt, HarvestError, StorageError
from harvest_engine.store.rows import UnreadableRow

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

T = TypeVar("T")


def translate(exc: BaseException, path: str) -> BaseException:
    """The typed error that stands for `exc` met on the database `path` (or `exc` itself)."""
    if isinstance(exc, UnreadableRow):
        return DatabaseCorrupt(path=path, reason=str(exc))
    if isinstance(exc, HarvestError) or not isinstance(exc, psycopg.Error):
        return exc
    text = str(exc).strip().splitlines()
    reason = text[0] if text else type(exc).__name__
    if isinstance(exc, psycopg.errors.DataCorrupted | psycopg.errors.IndexCorrupted):
        return DatabaseCorrupt(path=path, reason=reason)
    return StorageError(path=path, reason=reason)


@contextmanager
def boundary(path: str) -> Iterator[None]:
    """Raise the typed error for any psycopg failure inside the block."""
    try:
        yield
    except psycopg.Error as exc:
        raise translate(exc, path) from exc


def _wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def run_gen(owner: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            with boundary(str(getattr(owner, "path", "?"))):
                yield from fn(owner, *args, **kwargs)

        return run_gen

    @functools.wraps(fn)
    def run(owner: Any, *args: Any, **kwargs: Any) -> Any:
        with boundary(str(getattr(owner, "path", "?"))):
            return fn(owner, *args, **kwargs)

    return run


def guard_public_methods(*, skip: tuple[str, ...] = ()) -> Callable[[type[T]], type[T]]:
    """A class decorator: every public instance method raises only typed errors."""

    def decorate(cls: type[T]) -> type[T]:
        for name, member in list(vars(cls).items()):
            if name.startswith("_") or name in skip:
                continue
            if inspect.isfunction(member):
                setattr(cls, name, _wrap(member))
        return cls

    return decorate
