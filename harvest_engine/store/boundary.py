"""The store-neutral typed-error boundary: each store hands in its own `translate`.

Every public call of a store, a reader, a client and the runtime passes
through a boundary, so no driver, OS or decoding failure reaches a caller:
it arrives as a `harvest_engine.errors` type with the original as
``__cause__``. What counts as such a failure and which typed error stands
for it is the store's (`sqlite/faults.py`, `postgres/faults.py`); how a
call is wrapped is written here once.
"""

from __future__ import annotations

import functools
import inspect
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from harvest_engine.errors import DatabaseCorrupt, HarvestError, StorageError
from harvest_engine.store.rows import UnreadableRow

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator

T = TypeVar("T")

NEUTRAL: tuple[type[BaseException], ...] = (
    UnreadableRow,
    OSError,
    RecursionError,
    OverflowError,
    UnicodeError,
    MemoryError,
)
"""Failures any store can meet (the OS, memory, decoding a stored value): `translate_neutral`'s."""


def translate_neutral(exc: BaseException, path: str) -> BaseException:
    """The typed error for a failure that is no driver's own, met on the store at `path`."""
    if isinstance(exc, UnreadableRow):
        return DatabaseCorrupt(path=path, reason=str(exc))
    if isinstance(exc, TimeoutError):  # an OSError, but a wait's deadline, not the disk
        return exc
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc) or type(exc).__name__
        if exc.filename is not None and str(exc.filename) != path:
            reason = f"{exc.filename}: {reason}"
        return StorageError(path=path, reason=reason)
    if isinstance(exc, MemoryError):
        return StorageError(path=path, reason="out of memory")
    if isinstance(exc, UnicodeEncodeError):
        return StorageError(path=path, reason=f"text the store cannot hold ({exc})")
    if isinstance(exc, RecursionError):
        return DatabaseCorrupt(path=path, reason="a stored value is nested too deep")
    if isinstance(exc, NEUTRAL):
        return DatabaseCorrupt(
            path=path,
            reason=f"a stored value cannot be read ({type(exc).__name__}: {exc})",
        )
    return exc


class Boundary:
    """One store's boundary: what it catches and how it translates it."""

    def __init__(
        self,
        caught: tuple[type[BaseException], ...],
        translate: Callable[[BaseException, str], BaseException],
    ) -> None:
        self.caught = caught
        self.translate = translate

    @contextmanager
    def block(self, path: str) -> Iterator[None]:
        """Raise the typed error for any caught failure inside the block."""
        try:
            yield
        except self.caught as exc:
            raise self.translate(exc, path) from exc

    def guard_public_methods(
        self, *, skip: tuple[str, ...] = (), bases: tuple[type, ...] = ()
    ) -> Callable[[type[T]], type[T]]:
        """A class decorator: every public method (and classmethod) raises only typed errors.

        Args:
            skip: methods that translate on their own (a context manager such
                as the write-transaction helper, whose failures come at exit).
            bases: store-neutral base classes (store/sql) whose public
                methods the class inherits: each is guarded on the class, with
                this store's translation, unless the class overrides it.
        """

        def decorate(cls: type[T]) -> type[T]:
            members: dict[str, object] = {}
            for base in reversed(bases):
                members.update(vars(base))
            members.update(vars(cls))
            for name, member in members.items():
                if name.startswith("_") or name in skip:
                    continue
                if isinstance(member, classmethod):
                    setattr(cls, name, classmethod(self._wrap(member.__func__)))
                elif inspect.isfunction(member):
                    setattr(cls, name, self._wrap(member))
            return cls

        return decorate

    def _translation(
        self, owner: Any, exc: BaseException, args: tuple[Any, ...]
    ) -> BaseException:
        """The typed error for `exc` raised in a call on `owner` (or `exc` itself)."""
        return self.translate(exc, _path_of(owner, args))

    def _wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        # try/except in each wrapper, not `with block(...)`: a public call pays
        # for a try block only, and the path is looked up only when translating.
        caught, translation = self.caught, self._translation
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(owner: Any, *args: Any, **kwargs: Any) -> Any:
                try:
                    return await fn(owner, *args, **kwargs)
                except caught as exc:
                    if (typed := translation(owner, exc, args)) is exc:
                        raise
                    raise typed from exc

            return run_async
        if inspect.isasyncgenfunction(fn):

            @functools.wraps(fn)
            async def run_async_gen(
                owner: Any, *args: Any, **kwargs: Any
            ) -> AsyncIterator[Any]:
                try:
                    async for item in fn(owner, *args, **kwargs):
                        yield item
                except caught as exc:
                    if (typed := translation(owner, exc, args)) is exc:
                        raise
                    raise typed from exc

            return run_async_gen
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def run_gen(owner: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
                try:
                    yield from fn(owner, *args, **kwargs)
                except caught as exc:
                    if (typed := translation(owner, exc, args)) is exc:
                        raise
                    raise typed from exc

            return run_gen

        @functools.wraps(fn)
        def run(owner: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return fn(owner, *args, **kwargs)
            except caught as exc:
                if (typed := translation(owner, exc, args)) is exc:
                    raise
                raise typed from exc

        return run


class StoreBoundary(Boundary):
    """The boundary of a facade over a store it is given: that store's boundary translates.

    The runtime names no store, so it cannot name a driver's errors either; at
    a failure (and only then) it asks the store it holds which errors are its
    own and what they mean; the OS's, memory's and decoding's are said the same
    way for every store (`translate_neutral`), and anything else goes on as it was.
    """

    def __init__(self, boundary_of: Callable[[Any], Boundary | None]) -> None:
        super().__init__((Exception,), _unchanged)
        self._boundary_of = boundary_of

    def _translation(
        self, owner: Any, exc: BaseException, args: tuple[Any, ...]
    ) -> BaseException:
        try:
            boundary = self._boundary_of(owner)
        except AttributeError:  # failed before the owner held its store
            return exc
        if isinstance(exc, HarvestError):
            return exc
        if boundary is not None and isinstance(exc, boundary.caught):
            return boundary.translate(exc, _path_of(owner, args))
        return translate_neutral(exc, _path_of(owner, args))


def _unchanged(exc: BaseException, path: str) -> BaseException:
    return exc


def _path_of(owner: Any, args: tuple[Any, ...]) -> str:
    """The database a failing call was about, for the error's message."""
    if isinstance(owner, type):  # a classmethod: open(path, ...)
        return str(args[0]) if args else "?"
    path = getattr(owner, "path", None)
    if path is None:
        path = getattr(getattr(owner, "store", None), "path", "?")
    return str(path)
