"""How a waiting client learns that the store changed: the file's wake channel, Postgres notices, or a poll.

A waiter enters `watching(...)` before it reads what it waits for, then
reads, then `pause`s until something may have changed, and reads again.
On a file the serving process wakes it through the wake channel
(store/sqlite/wake_channel.py) right after each commit, and the waiter
re-reads every `SAFETY_RECHECK_SECONDS` besides; with no channel (no
server listening, another OS) it polls `data_version` every few
milliseconds and re-reads only when it moved. On Postgres the commit's
NOTIFY wakes it (client_notices.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

from harvest_engine.loop_readers import read_when_ready
from harvest_engine.store.sqlite.client_queue import CommandQueue
from harvest_engine.store.sqlite.wake_channel import COMMAND, READER, WakeClient

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from harvest_engine.store.postgres.client_notices import Watch
    from harvest_engine.store.postgres.client_queue import PostgresCommandQueue

# A waiter hearing wakes still re-reads this often, in case one was missed.
SAFETY_RECHECK_SECONDS = 0.5
# The first pause after telling the server stays short: a commit the server
# made before it read our datagram woke nobody.
FIRST_PAUSE_SECONDS = 0.02


class Pause(Protocol):
    """One waiter's way to sleep until the store may have changed."""

    async def pause(self, deadline: float | None, poll: float) -> bool:
        """Return when something may have changed; False once past `deadline` (loop time)."""
        ...


class ClientWakes:
    """A client's end of a file's wake channel, opened at its first wait, on one event loop."""

    def __init__(self, db_path: str) -> None:
        self._path = db_path
        self._channel: WakeClient | None = None
        self._tried = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._events: set[asyncio.Event] = set()

    def _ready(self) -> WakeClient | None:
        """The channel, read by the running loop; None where a waiter must poll."""
        loop = asyncio.get_running_loop()
        if self._channel is None:
            if self._tried:
                return None
            self._tried = True
            self._channel = WakeClient.open(self._path)
            if self._channel is None:
                return None
        if self._loop is not loop:
            if self._loop is not None and not self._loop.is_closed():
                return None  # another loop reads it: this one polls
            if not read_when_ready(loop, self._channel.fd, self._readable):
                return None  # a loop without readers: this client polls
            self._loop = loop
        return self._channel

    def _readable(self) -> None:
        if self._channel is not None:
            self._channel.drain()
        for event in self._events:
            event.set()

    @contextmanager
    def watch(
        self, version: Callable[[], int], what: bytes = READER
    ) -> Iterator[Pause]:
        """A waiter's pause; `what` is COMMAND right after queueing one (the applier looks at once)."""
        event = asyncio.Event()
        channel = self._ready()
        if channel is not None:
            self._events.add(event)
        try:
            yield _FilePause(channel, event, version, what)
        finally:
            self._events.discard(event)

    def close(self) -> None:
        """Stop reading and unbind (safe to call twice)."""
        channel, self._channel = self._channel, None
        loop, self._loop = self._loop, None
        if channel is None:
            return
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError, ValueError, OSError):
                loop.remove_reader(channel.fd)
        channel.close()


class _FilePause:
    """A waiter on a file: woken by the server's datagram, else polling `data_version`."""

    def __init__(
        self,
        channel: WakeClient | None,
        event: asyncio.Event,
        version: Callable[[], int],
        what: bytes,
    ) -> None:
        self._channel = channel
        self._event = event
        self._version = version
        self._seen = version()
        # Told before the waiter's first read, so a commit after it wakes us.
        self._live = channel is not None and channel.tell(what)
        self._first = True

    async def pause(self, deadline: float | None, poll: float) -> bool:
        loop = asyncio.get_running_loop()
        if self._channel is not None and not self._first:
            self._live = self._channel.tell(
                READER
            )  # keeps us heard; finds a new server
        if self._live:
            limit = FIRST_PAUSE_SECONDS if self._first else SAFETY_RECHECK_SECONDS
            self._first = False
            now = loop.time()
            if deadline is not None:
                if now >= deadline:
                    return False
                limit = min(limit, deadline - now)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(limit):
                    await self._event.wait()
            self._event.clear()
            return True
        self._first = False
        while True:
            if deadline is not None and loop.time() >= deadline:
                return False
            await asyncio.sleep(poll)
            seen = self._version()
            if seen != self._seen:
                self._seen = seen
                return True
            if self._channel is not None and self._channel.tell(READER):
                self._live = True
                return True


class NoticePause:
    """A waiter on Postgres: a notice for its key, or the poll tick while notices are down."""

    def __init__(self, watch: Watch) -> None:
        self._watch = watch

    @property
    def notified(self) -> bool:
        """Whether a notice for the key will wake this waiter (the LISTEN is up)."""
        return self._watch.live

    def reply(self) -> str | None:
        """The reply JSON a command's notice carried, once heard; else None (read it)."""
        return self._watch.reply()

    async def pause(self, deadline: float | None, poll: float) -> bool:
        """Return at a notice for the key or a re-check; False once past `deadline`."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        if deadline is not None and now >= deadline:
            return False
        limit = SAFETY_RECHECK_SECONDS if self._watch.live else poll
        if deadline is not None:
            limit = min(limit, deadline - now)
        await self._watch.wait(limit)
        return True


@contextmanager
def watching(
    queue: CommandQueue | PostgresCommandQueue,
    wakes: ClientWakes | None,
    key: str,
    version: Callable[[], int],
    *,
    command: bool = False,
) -> Iterator[Pause]:
    """Wait for changes of `key` (a command id or a run id); enter it before the first read."""
    if isinstance(queue, CommandQueue):
        if wakes is None:
            wakes = ClientWakes("")  # polls: no channel for a path-less queue
        with wakes.watch(version, COMMAND if command else READER) as pause:
            yield pause
    else:
        with queue.watch(key) as watch:
            yield NoticePause(watch)
