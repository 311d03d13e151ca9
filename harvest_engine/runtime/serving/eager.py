"""Eager start: run a coroutine's first step at once, and make a task only if it suspends.

Most activity bodies of a batch never wait on anything (they compute and
return), yet each used to cost an `asyncio` task: its creation, a loop
iteration to start it, done callbacks and `asyncio.wait` bookkeeping. An
eager start runs the first step in the caller's turn, in its own copy of
the context as a task's step would be; a body that finishes there needs no
task at all, and one that suspends goes on in a task exactly where it
stopped. Python 3.12 has this built in (`eager_start`); 3.11 does not.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Coroutine, Generator

T = TypeVar("T")


class Started(Generic[T]):
    """What an eager start gave: the value (`done`), or the task running the rest."""

    __slots__ = ("done", "task", "value")

    def __init__(
        self, *, value: T | None = None, task: asyncio.Future[T] | None = None
    ) -> None:
        self.done = task is None
        self.value = value
        self.task = task


def start(coro: Coroutine[Any, Any, T]) -> Started[T]:
    """Run `coro` up to its first suspension; a task carries on from there.

    An exception of the first step is kept in a finished future, as a task
    would keep it (`KeyboardInterrupt` and `SystemExit` propagate, as they
    do out of a task's step), so the caller meets it where it reads results.
    """
    context = contextvars.copy_context()
    loop = asyncio.get_running_loop()
    try:
        pending = context.run(coro.send, None)
    except StopIteration as stop:
        return Started(value=stop.value)
    except (KeyboardInterrupt, SystemExit):
        raise
    except asyncio.CancelledError:
        cancelled: asyncio.Future[T] = loop.create_future()
        cancelled.cancel()
        return Started(task=cancelled)
    except BaseException as exc:  # noqa: BLE001 - kept for the reader, as a task keeps it
        failed: asyncio.Future[T] = loop.create_future()
        failed.set_exception(exc)
        return Started(task=failed)
    return Started(task=loop.create_task(_rest(coro, pending), context=context))


async def _rest(coro: Coroutine[Any, Any, T], pending: Any) -> T:
    return await _Resume(coro, pending)


class _Resume(Generic[T]):
    """Awaitable handing a started coroutine's pending future to the task, then the rest."""

    __slots__ = ("_coro", "_pending")

    def __init__(self, coro: Coroutine[Any, Any, T], pending: Any) -> None:
        self._coro = coro
        self._pending = pending

    def __await__(self) -> Generator[Any, None, T]:
        coro, pending = self._coro, self._pending
        while True:
            try:
                yield pending  # the task waits on it as the coroutine asked
            except BaseException as exc:  # noqa: BLE001 - thrown in by the task (a cancel): forwarded
                try:
                    pending = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value  # type: ignore[no-any-return]
                continue
            try:
                pending = coro.send(None)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
