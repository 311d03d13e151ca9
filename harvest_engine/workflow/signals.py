"""SignalInbox: one run's buffered signals, parked waiters, push handlers, in arrival order."""

from __future__ import annotations

import collections
import inspect
from typing import TYPE_CHECKING, Any

from harvest_engine.errors import ApplicationError, PayloadTooDeep, PayloadTooLarge

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from harvest_engine.workflow.loop import DeterministicLoop

RUN_FAILURES = (ApplicationError, PayloadTooDeep, PayloadTooLarge)
"""What a handler may raise to fail the run (the body's failing errors, API.md)."""


class SignalInbox:
    """Delivers each SignalReceived exactly once: to a handler, a waiter, or the buffer."""

    def __init__(self, loop: DeterministicLoop) -> None:
        self._loop = loop
        self._buffers: dict[str, collections.deque[Any]] = collections.defaultdict(
            collections.deque
        )
        self._waiters: dict[str, collections.deque[asyncio.Future[Any]]] = (
            collections.defaultdict(collections.deque)
        )
        self._handlers: dict[str, Callable[[Any], Any]] = {}
        # What a handler raised that fails the run, as if the body raised it
        # (the first one wins; see `_call`).
        self.failure: BaseException | None = None
        # Waiters whose deadline won, by name: a signal of that name left
        # unread lost a deadline race, which strict replay forgives (guide §8).
        self._races_lost: collections.Counter[str] = collections.Counter()

    def arrive(self, name: str, payload: Any) -> None:
        """A signal reached the run (applied from its SignalReceived event)."""
        handler = self._handlers.get(name)
        if handler is not None:
            self._call(handler, payload)
            return
        waiters = self._waiters.get(name)
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(payload)
                return
        self._buffers[name].append(payload)

    def _call(self, handler: Callable[[Any], Any], payload: Any) -> None:
        """Call a handler; a run-failing error it raises fails the run, not the drive.

        A handler runs outside the body when its signal arrives after the
        body parked, so an ApplicationError it raised would escape the
        decision as a bug (a Panic). It is kept as the run's failure
        instead, which the runtime reads like the body's own (API.md:
        it fails the run). Any other exception is a bug and propagates.
        """
        try:
            result = self._loop.call_inside(handler, payload)
        except RUN_FAILURES as exc:
            self._fail(exc)
            return
        if inspect.isawaitable(result):
            self._loop.create_task(self._await(result))

    async def _await(self, awaitable: Any) -> None:
        try:
            await awaitable
        except RUN_FAILURES as exc:
            self._fail(exc)

    def _fail(self, error: BaseException) -> None:
        if self.failure is None:
            self.failure = error

    def has(self, name: str) -> bool:
        """Whether a payload of `name` is buffered."""
        return bool(self._buffers.get(name))

    def pop(self, name: str) -> Any:
        """The oldest buffered payload, or None."""
        buffer = self._buffers.get(name)
        return buffer.popleft() if buffer else None

    def drain(self, name: str) -> list[Any]:
        """Every buffered payload of `name`, oldest first."""
        buffer = self._buffers.pop(name, None)
        return list(buffer) if buffer else []

    def waiter(self, name: str) -> asyncio.Future[Any]:
        """Park a waiter for the next signal `name`."""
        future: asyncio.Future[Any] = self._loop.create_future()
        self._waiters[name].append(future)
        return future

    def discard(self, name: str, waiter: asyncio.Future[Any]) -> None:
        """Drop a waiter whose deadline won."""
        waiters = self._waiters.get(name)
        if waiters and waiter in waiters:
            waiters.remove(waiter)
            self._races_lost[name] += 1

    async def next(self, name: str) -> Any:
        """The next payload of `name`: buffered at once, else when it arrives."""
        if self.has(name):
            return self.pop(name)
        return await self.waiter(name)

    def set_handler(self, name: str, fn: Callable[[Any], Any]) -> None:
        """Push signals of `name` to `fn`, buffered ones first."""
        self._handlers[name] = fn
        for payload in self.drain(name):
            self._call(fn, payload)

    def waiting_names(self) -> list[str]:
        """Signal names with a parked waiter, in the order they were parked."""
        if not self._waiters:
            return []
        return [
            name for name, ws in self._waiters.items() if any(not w.done() for w in ws)
        ]

    def handler_names(self) -> list[str]:
        """Signal names with a registered push handler, sorted."""
        return sorted(self._handlers)

    def handlers(self) -> dict[str, Callable[[Any], Any]]:
        """The push handlers by signal name, in registration order."""
        return dict(self._handlers)

    def never_read(self) -> list[str]:
        """Names of buffered signals the code never read, beyond those that lost a deadline race."""
        return [
            name
            for name, buffer in self._buffers.items()
            if len(buffer) > self._races_lost[name]
        ]

    def buffered(self) -> dict[str, int]:
        """How many payloads of each name are buffered (for queries and the GUI)."""
        return {name: len(b) for name, b in self._buffers.items() if b}
