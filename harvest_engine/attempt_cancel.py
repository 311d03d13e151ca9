"""AttemptCancel: one running attempt's cancel, as its body meets it (a flag, `heartbeat()`, its next await).

A cancel may come from any thread: the serving loop's own write (a run's
cancel or terminate, a handle's cancel), a Postgres notice heard by the
listening thread, or the attempt's start-to-close timer. It sets the flag
`ActivityContext.is_cancelled()` reads at once; a sync body's next
`heartbeat()` raises `ActivityCancelled`; an async body, driven through
`run()`, gets `asyncio.CancelledError` at the await it is parked on (the
future it waits for is cancelled, as `Task.cancel` would, without touching
the task that runs it, which may be the pass running other bodies too).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Coroutine, Generator

T = TypeVar("T")


class AttemptCancel:
    """The cancel of one attempt: set once, with its reason, from any thread."""

    __slots__ = ("_loop", "_throw", "_waiting", "reason", "running", "timed_out")

    def __init__(self) -> None:
        self.reason: str | None = None
        """Why the attempt was cancelled; None while it is not."""
        self.timed_out = False
        """Whether the cancel is the attempt's start-to-close passing."""
        self.running = False
        """Whether an async body is being driven through `run()` now."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: Any = None
        self._throw = False

    @property
    def cancelled(self) -> bool:
        """Whether the attempt was cancelled (for any reason)."""
        return self.reason is not None

    def cancel(self, reason: str) -> None:
        """Cancel the attempt (a repeat keeps the first reason); safe from any thread."""
        if self.reason is not None:
            return
        self.reason = reason
        loop = self._loop
        if loop is not None and self.running:
            # A closed loop took the body with it: nothing to reach.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._deliver)

    def time_out(self, budget: float) -> None:
        """The attempt ran past its start-to-close (a timer of the body's loop)."""
        if self.reason is None:
            self.timed_out = True
        self.cancel(f"it ran past its start_to_close of {budget:g}s")

    def _deliver(self) -> None:
        """On the body's loop: wake the body with CancelledError where it waits."""
        if not self.running:
            return
        waiting = self._waiting
        if isinstance(waiting, asyncio.Future) and not waiting.done():
            waiting.cancel()
        else:
            self._throw = True  # parked on a bare yield: thrown at its resume

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await an async body so that a cancel reaches it at its next await."""
        self._loop = asyncio.get_running_loop()
        self.running = True
        try:
            if self.reason is not None:
                self._throw = True  # cancelled before it began: at its first await
            return await _Driven(coro, self)
        finally:
            self.running = False
            self._waiting = None


class _Driven(Generic[T]):
    """Awaitable stepping a body's coroutine, noting the future it waits on for `_deliver`."""

    __slots__ = ("_cancel", "_coro")

    def __init__(self, coro: Coroutine[Any, Any, T], cancel: AttemptCancel) -> None:
        self._coro = coro
        self._cancel = cancel

    def __await__(self) -> Generator[Any, None, T]:
        coro, cancel = self._coro, self._cancel
        error: BaseException | None = None
        while True:
            try:
                if error is not None:
                    pending = coro.throw(error)
                elif cancel._throw:
                    cancel._throw = False
                    pending = coro.throw(asyncio.CancelledError())
                else:
                    pending = coro.send(None)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            error = None
            cancel._waiting = pending
            try:
                yield pending  # the task waits on it as the body asked
            except BaseException as exc:  # noqa: BLE001 - thrown in by the task: forwarded
                error = exc
