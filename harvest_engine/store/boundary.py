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

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator

T = TypeVar("T")


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

    def _wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        # try/except in each wrapper, not `with block(...)`: a public call pays
        # for a try block only, and the path is looked up only when translating.
        caught, translate = self.caught, self.translate
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(owner: Any, *args: Any, **kwargs: Any) -> Any:
                try:
                    return await fn(owner, *args, **kwargs)
                except caught as exc:
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
                except caught as exc:
                    raise translate(exc, _path_of(owner, args)) from exc

            return run_async_gen
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def run_gen(owner: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
                try:
                    yield from fn(owner, *args, **kwargs)
                except caught as exc:
                    raise translate(exc, _path_of(owner, args)) from exc

            return run_gen

        @functools.wraps(fn)
        def run(owner: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return fn(owner, *args, **kwargs)
            except caught as exc:
                raise translate(exc, _path_of(owner, args)) from exc

        return run


def _path_of(owner: Any, args: tuple[Any, ...]) -> str:
    """The database a failing call was about, for the error's message."""
    if isinstance(owner, type):  # a classmethod: open(path, ...)
        return str(args[0]) if args else "?"
    path = getattr(owner, "path", None)
    if path is None:
        path = getattr(getattr(owner, "store", None), "path", "?")
    return str(path)
