"""A plain activity body's thread: the loop's default executor, its result handed back in one hop.

`loop.run_in_executor` wraps the executor's future in an asyncio future
and chains the two (done callbacks both ways, the state copied across,
the condition of the concurrent future taken half a dozen times): about
70 Python calls of the loop thread per body, which a queue of short
bodies pays for every attempt. Here the worker thread itself settles an
asyncio future with one `call_soon_threadsafe`, on the same executor
(asyncio's default, made as `run_in_executor` makes it), so bodies share
the threads they always ran in and `asyncio.run` still waits for them at
its end. A future cancelled before its thread takes it never runs the
body, as a queued work item does not. An executor that is not a thread
pool (a loop's own default, set by its owner) keeps the chained path.
"""

from __future__ import annotations

import concurrent.futures
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

T = TypeVar("T")

_UNKNOWN = object()


def executor_of(
    loop: asyncio.AbstractEventLoop,
) -> concurrent.futures.ThreadPoolExecutor | None:
    """The loop's default executor (made as run_in_executor makes it); None: not a plain pool."""
    executor = getattr(loop, "_default_executor", _UNKNOWN)
    if executor is None:
        # What run_in_executor would make (asyncio/base_events.py), made here.
        executor = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="asyncio")
        loop.set_default_executor(executor)
    if type(executor) is not concurrent.futures.ThreadPoolExecutor:
        return None
    return executor


def run_in_thread(
    loop: asyncio.AbstractEventLoop, call: Callable[[], T]
) -> asyncio.Future[T]:
    """`loop.run_in_executor(None, call)`, settled from the worker thread directly."""
    executor = executor_of(loop)
    if executor is None:
        return loop.run_in_executor(None, call)
    future: asyncio.Future[T] = loop.create_future()
    executor.submit(_run, loop, future, call)
    return future


class Submitted:
    """A call handed to a thread by `submit`; `dropped` before it starts: it never runs."""

    __slots__ = ("dropped",)

    def __init__(self) -> None:
        self.dropped = False


def submit(
    executor: concurrent.futures.ThreadPoolExecutor,
    loop: asyncio.AbstractEventLoop,
    call: Callable[[], Any],
    then: Callable[[Any, BaseException | None], None],
) -> Submitted:
    """Run `call` in a thread of `executor`, then `then(value, error)` on the loop.

    No future at all: the thread schedules `then` itself (one loop callback
    per call), which a pass of many plain bodies reads its outcomes from
    (runtime/serving/plain_bodies.py). Unless the loop closed meanwhile.
    """
    submitted = Submitted()
    executor.submit(_call_then, loop, submitted, call, then)
    return submitted


def _call_then(
    loop: asyncio.AbstractEventLoop,
    submitted: Submitted,
    call: Callable[[], Any],
    then: Callable[[Any, BaseException | None], None],
) -> None:
    if submitted.dropped:
        return
    try:
        value = call()
    except BaseException as exc:  # noqa: BLE001 - every outcome goes to the loop
        _hand_back(loop, then, None, exc)
    else:
        _hand_back(loop, then, value, None)


def _run(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    call: Callable[[], Any],
) -> None:
    """In the worker thread: the body, then its outcome to the loop (unless it closed)."""
    if future.cancelled():
        return  # cancelled while queued: the body does not run
    try:
        value = call()
    except BaseException as exc:  # noqa: BLE001 - every outcome goes to the awaiting loop
        _hand_back(loop, _set_exception, future, exc)
    else:
        _hand_back(loop, _set_result, future, value)


def _hand_back(
    loop: asyncio.AbstractEventLoop,
    settle: Callable[[Any, Any], None],
    first: Any,
    second: Any,
) -> None:
    try:
        loop.call_soon_threadsafe(settle, first, second)
    except RuntimeError:  # the loop closed meanwhile: nobody awaits the outcome
        return


def _set_result(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():  # not cancelled while the body ran
        future.set_result(value)


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
