"""BodyEnds: the one waiter a pass sleeps on while its bodies run, told by each body as it ends.

`asyncio.wait` over the running bodies, once a round, adds a done callback
to every one and removes it again, and each end reaches it through a loop
callback of its own. A pass of many short bodies did that for every
completion. Here each body tells the pass's `BodyEnds` itself when it ends
(a plain attempt at once, plain_bodies.py; a task through one done
callback for its whole life), and the pass reads which ended from the
futures themselves (`done()`), as `asyncio.wait` would have returned them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Collection


class BodyEnds:
    """Counts the ends of a pass's bodies and wakes the pass waiting for one."""

    __slots__ = ("_loop", "_waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._waiter: asyncio.Future[None] | None = None

    def __call__(self, _: Any = None) -> None:
        """A body ended (a done callback, or a plain attempt's own call)."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self, seconds: float | None = None) -> None:
        """Until the next body ends, or `seconds` pass."""
        loop = self._loop
        self._waiter = waiter = loop.create_future()
        timer = None if seconds is None else loop.call_later(seconds, _release, waiter)
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()

    async def first(
        self, running: Collection[asyncio.Future[Any]], window: float
    ) -> set[asyncio.Future[Any]]:
        """The bodies that ended once one has, and those that end within `window` after.

        As `asyncio.wait(FIRST_COMPLETED)` then `asyncio.wait(rest,
        timeout=window)`: bodies in threads finish a little apart, and
        recording the first alone and the rest a moment later would cost
        two commits where one does (group commit).
        """
        done = {f for f in running if f.done()}
        while not done:
            await self.wait()
            done = {f for f in running if f.done()}
        if window <= 0 or len(done) == len(running):
            return done
        deadline = self._loop.time() + window
        while len(done) < len(running):
            left = deadline - self._loop.time()
            if left <= 0:
                break
            await self.wait(left)
            done = {f for f in running if f.done()}
        return done


def _release(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
