"""A client's LISTEN connection: a command's reply and a run's end wake its waiters at once.

The transaction that writes a command's reply notifies ``harvest_reply``
with the command id, and the one that seals a run notifies ``harvest_done``
with the run's id, and one writing its events or streams notifies
``harvest_progress`` with it (notify.py). A client listens on all three on its own
connection, opened on its first wait, and a daemon thread hands each notice
to the coroutines waiting on that id (on whatever event loop they run): no
polling. The thread reads every notice as it comes, waiters or not, so the
server's notice queue never backs up behind an idle client.

A waiter still re-reads now and then (the caller's safety re-check), and a
`Watch` says whether notices reach it (`live`): once the connection broke,
the caller polls as before until a wait listens again (a new one at once,
one under way at most every second).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

import psycopg

from harvest_engine.store.postgres.connection import reconnect
from harvest_engine.store.postgres.notify import (
    DONE_CHANNEL,
    PROGRESS_CHANNEL,
    REPLY_CHANNEL,
    reply_notice,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

log = logging.getLogger("harvest_engine.postgres")

Waiter = tuple[asyncio.AbstractEventLoop, asyncio.Event]

# A waiter whose LISTEN connection broke tries to listen again this often
# (seconds), polling meanwhile.
REVIVE_EVERY = 1.0


class Watch:
    """One waiter's view: its event (set by a notice for its key) and whether notices come."""

    def __init__(self, notices: Notices, event: asyncio.Event, key: str) -> None:
        self._notices = notices
        self.event = event
        self._key = key

    def reply(self) -> str | None:
        """The reply a command's notice carried (its key a command id), else None.

        The notice comes at the reply's commit, so the reply is the row's:
        the caller needs no read.
        """
        return self._notices.replies.get(self._key)

    @property
    def live(self) -> bool:
        """Whether notices reach this waiter now (False once the connection broke).

        A waiter that finds them down asks for them again, at most every
        REVIVE_EVERY seconds: a long wait polls only until the server is back.
        """
        if self._notices.listening:
            return True
        self._notices.revive()
        return self._notices.listening

    async def wait(self, seconds: float) -> None:
        """Return at the next notice for the key, or after `seconds` (then the caller re-reads)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.0, seconds)):
                await self.event.wait()
        self.event.clear()


class Notices:
    """The LISTEN connection of one client, shared by all its waiting coroutines."""

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._guard = threading.Lock()
        self._starting = threading.Lock()
        self._waiters: dict[str, set[Waiter]] = {}
        self.replies: dict[str, str] = {}
        """Replies heard in notices, by command id, while someone waits on it."""
        self._reader: _Reader | None = None
        self._revive_at = 0.0
        self.closed = False

    @property
    def listening(self) -> bool:
        """Whether the LISTEN connection is up and read."""
        reader = self._reader
        return reader is not None and reader.alive

    @contextmanager
    def watch(self, key: str) -> Iterator[Watch]:
        """Wait for notices about `key` (a command id or a run id) inside the block.

        The LISTEN is in place when the block starts, so a notice of a commit
        made after it is never missed: the caller reads the state after
        entering the block, then waits.
        """
        waiter: Waiter = (asyncio.get_running_loop(), asyncio.Event())
        self._start()
        with self._guard:
            self._waiters.setdefault(key, set()).add(waiter)
        try:
            yield Watch(self, waiter[1], key)
        finally:
            with self._guard:
                waiters = self._waiters.get(key)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del self._waiters[key]
                        self.replies.pop(key, None)

    def revive(self) -> None:
        """Listen again after the connection broke (at most every REVIVE_EVERY seconds)."""
        now = time.monotonic()
        if now >= self._revive_at:
            self._revive_at = now + REVIVE_EVERY
            self._start()

    def close(self) -> None:
        """Stop listening and close the connection (safe to call twice)."""
        self.closed = True
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.stop()

    def _start(self) -> None:
        """Listen, unless a live reader does already; on failure the waiters poll."""
        with self._starting:  # waits on two event loops at once start one reader
            if self.closed or self.listening:
                return
            if self._reader is not None:
                self._reader.stop()
                self._reader = None
            try:
                self._reader = _Reader(self._dsn, self._dispatch)
            except Exception as exc:  # noqa: BLE001 - no notices: the waiters poll
                log.warning("client LISTEN unavailable (%s); polling instead", exc)

    def _dispatch(self, key: str | None, reply: str | None = None) -> None:
        """Wake the waiters of `key` (None: every waiter, the connection broke).

        A command's `reply` carried in its notice is kept for its waiters.
        """
        with self._guard:
            if key is None:
                waiters = [w for found in self._waiters.values() for w in found]
            else:
                waiters = list(self._waiters.get(key, ()))
                if reply is not None and waiters:
                    self.replies[key] = reply
        for loop, event in waiters:
            if not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(event.set)


class _Reader:
    """The connection and the daemon thread reading its notices, until stopped or broken."""

    def __init__(
        self, dsn: str, dispatch: Callable[[str | None, str | None], None]
    ) -> None:
        conn = reconnect(dsn)
        try:
            conn.execute(
                f"LISTEN {REPLY_CHANNEL}; LISTEN {DONE_CHANNEL}; LISTEN {PROGRESS_CHANNEL}"
            )
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._dispatch = dispatch
        self._wake_r, self._wake_w = os.pipe()
        self.alive = True
        self._thread = threading.Thread(
            target=self._run, name="harvest-client-listen", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        pgconn = self._conn.pgconn
        fd = self._conn.fileno()
        try:
            while True:
                ready, _, _ = select.select([fd, self._wake_r], [], [])
                if self._wake_r in ready:
                    return
                pgconn.consume_input()
                while (notice := pgconn.notifies()) is not None:
                    payload = notice.extra.decode()
                    if notice.relname.decode() == REPLY_CHANNEL:
                        self._dispatch(*reply_notice(payload))
                    else:
                        self._dispatch(payload, None)
        except (psycopg.Error, OSError, ValueError) as exc:
            log.warning("client LISTEN connection lost (%s)", exc)
        finally:
            self.alive = False
            self._dispatch(None, None)  # every waiter re-reads now, then polls

    def stop(self) -> None:
        """End the thread and close the connection."""
        self.alive = False
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        with contextlib.suppress(Exception):
            self._conn.close()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
