"""Waker and Changes: how an in-process call wakes a serving loop, and a commit its readers."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from harvest_engine.store.rows import CommandHint


MAX_HINTS = 1024
"""Named rows kept for the applier; past these it reads the queue instead."""


class Waker:
    """The in-process wake of a serving loop; safe to call from any thread, served or not.

    `wake` sets the run loop's event (an in-process call changed a run);
    `wake_all` sets the command applier's too: a store that hears other
    processes' commits itself (Postgres LISTEN/NOTIFY) wakes through it
    instead of the poll. An in-process call never queues a client command,
    so it does not send the applier looking for one.
    """

    def __init__(self) -> None:
        self.wakes = 0
        """Calls of `wake` / `wake_all` (an in-process call changed a run): flow
        control's hint that a queue may admit again."""
        self._events: tuple[asyncio.Event, ...] = ()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._guard = threading.Lock()
        # The command rows the applier's wakes named, and whether one named none.
        self._hints: list[CommandHint] = []
        self._unnamed = True

    def attach(self, *also: asyncio.Event) -> asyncio.Event:
        """Bind to the running loop (the serving loop's); raise if one is bound already.

        Returns the run loop's event; a wake sets it and every event in `also`.
        """
        with self._guard:
            if self._events:
                raise RuntimeError("this runtime is already serving")
            self._loop = asyncio.get_running_loop()
            event = asyncio.Event()
            self._events = (event, *also)
            self._hints, self._unnamed = [], True  # a new loop reads the queue first
            return event

    def detach(self) -> None:
        """Unbind; later wakes do nothing until the next `serve`."""
        with self._guard:
            self._events = ()
            self._loop = None

    def wake(self) -> None:
        """Wake the serving loop now (a no-op when nothing serves)."""
        self._set(everyone=False)

    def wake_all(self) -> None:
        """Wake the serving loop and its command applier (another process committed)."""
        self._set(everyone=True)

    def wake_commands(self, hint: CommandHint | None = None) -> None:
        """Wake only the command applier (a client queued a command).

        The applier wakes the run loop after it applied what came; the run
        loop woken at once too would read its lists on the same connection
        before the command's transaction. A `hint` names the row queued (and
        the run it signals): the applier claims it without reading the queue.
        """
        with self._guard:
            if not self._events:
                pass  # nobody serves: the next serving loop reads the queue
            elif hint is None or len(self._hints) >= MAX_HINTS:
                self._unnamed = True
            else:
                self._hints.append(hint)
        self._set(everyone=True, loop_too=False)

    def command_hints(self) -> list[CommandHint] | None:
        """The rows named since the last call, in order; None: read the queue.

        None when some wake named no row (a client of an older harvest, a
        process that just started listening, a wake for another reason):
        only the queue then says what waits.
        """
        with self._guard:
            hints, self._hints = self._hints, []
            unnamed, self._unnamed = self._unnamed, False
        return None if unnamed or not hints else hints

    def _set(self, *, everyone: bool, loop_too: bool = True) -> None:
        self.wakes += 1
        with self._guard:
            events, loop = self._events, self._loop
        if not events or loop is None:
            return
        if not everyone:
            events = events[:1]
        elif not loop_too:
            events = events[1:]
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for event in events:
            if running is loop:
                event.set()
            elif not loop.is_closed():
                loop.call_soon_threadsafe(event.set)


class Changes:
    """Commits of this runtime, for in-process readers waiting on a run (`rt.get_event`, ...).

    The store calls `committed` after each commit (and a Postgres runtime
    when another worker's NOTIFY arrives); a waiter's event, on whatever
    loop it waits, is set then.
    """

    def __init__(self) -> None:
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._guard = threading.Lock()

    def committed(self) -> None:
        """Wake every waiter (a no-op when none waits)."""
        if not self._waiters:
            return
        with self._guard:
            waiters = list(self._waiters)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for loop, event in waiters:
            if loop is running:
                event.set()
            elif not loop.is_closed():
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(event.set)

    @contextlib.contextmanager
    def watch(self) -> Iterator[asyncio.Event]:
        """An event set at each commit while the block runs (enter it before reading)."""
        waiter = (asyncio.get_running_loop(), asyncio.Event())
        with self._guard:
            self._waiters.add(waiter)
        try:
            yield waiter[1]
        finally:
            with self._guard:
                self._waiters.discard(waiter)
