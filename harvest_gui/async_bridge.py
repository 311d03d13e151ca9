"""async_slot(): qasync slots whose errors reach the window and whose tasks end on close."""

from __future__ import annotations

import asyncio
import functools
import sys
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import qasync

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

P = ParamSpec("P")
R = TypeVar("R")

_presenter: Callable[[BaseException], None] | None = None
_tasks: set[asyncio.Task[Any]] = set()


def set_error_presenter(presenter: Callable[[BaseException], None] | None) -> None:
    """Send errors of async slots and background tasks to `presenter` (None: sys.excepthook)."""
    global _presenter
    _presenter = presenter


def present_error(exc: BaseException) -> None:
    """Show `exc` through the presenter, or hand it to `sys.excepthook`."""
    if _presenter is not None:
        _presenter(exc)
    else:
        sys.excepthook(type(exc), exc, exc.__traceback__)


def track(task: asyncio.Task[Any]) -> asyncio.Task[Any]:
    """Keep a reference to `task` until it ends, and present its error if it fails."""
    _tasks.add(task)

    def done(t: asyncio.Task[Any]) -> None:
        _tasks.discard(t)
        if not t.cancelled() and t.exception() is not None:
            present_error(t.exception())  # type: ignore[arg-type]

    task.add_done_callback(done)
    return task


def async_slot(
    *types: type,
) -> Callable[
    [Callable[P, Coroutine[Any, Any, R]]], Callable[P, asyncio.Task[R | None]]
]:
    """Like `qasync.asyncSlot`, but errors go to the presenter and tasks are tracked.

    Args:
        types: the slot's Qt argument types, as for `Slot`.

    """

    def decorate(
        fn: Callable[P, Coroutine[Any, Any, R]],
    ) -> Callable[P, asyncio.Task[R | None]]:
        @functools.wraps(fn)
        async def guarded(*args: P.args, **kwargs: P.kwargs) -> R | None:
            task = asyncio.current_task()
            if task is not None:
                _tasks.add(task)
            try:
                return await fn(*args, **kwargs)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                present_error(exc)
                return None
            finally:
                if task is not None:
                    _tasks.discard(task)

        # qasync's wrapper is a plain function that starts `guarded` as a task and returns it.
        slot: Callable[P, asyncio.Task[R | None]] = qasync.asyncSlot(*types)(guarded)
        return slot

    return decorate


def pending() -> list[asyncio.Task[Any]]:
    """Tracked tasks that have not ended."""
    return [t for t in _tasks if not t.done()]


def cancel_all() -> list[asyncio.Task[Any]]:
    """Cancel every tracked task; returns them so the caller can await their end."""
    tasks = [t for t in _tasks if not t.done()]
    for task in tasks:
        task.cancel()
    return tasks
