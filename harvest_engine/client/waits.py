"""How a client awaits a command's reply and a run's end: woken by the commit, polling as the fallback.

On a file the serving process wakes the client through the file's wake
channel right after the commit (wakes.py); without one, the client reads
`data_version` every few milliseconds and reads the reply (or the run) only
when it moved. On Postgres the transaction that writes the reply, or seals
the run, notifies the client (LISTEN/NOTIFY, client_notices.py). Either way
it re-reads every `SAFETY_RECHECK_SECONDS` besides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.client.wakes import (
    SAFETY_RECHECK_SECONDS,
    ClientWakes,
    NoticePause,
    watching,
)
from harvest_engine.errors import ExecutionNotFound
from harvest_engine.store.sqlite.client_queue import CommandQueue

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.store.postgres.client_queue import PostgresCommandQueue
    from harvest_engine.store.postgres.reader import PostgresReader
    from harvest_engine.store.records import ExecutionDetail
    from harvest_engine.store.sqlite.reader import SqliteReader

# How often a waiting client reads data_version (one cheap PRAGMA): the reply
# is read only when it moves. 2 ms keeps a command's round trip near the
# server's own poll without a busy loop.
REPLY_POLL_SECONDS = 0.002
RESULT_POLL_SECONDS = 0.005

__all__ = ["SAFETY_RECHECK_SECONDS", "ClientWakes", "command_reply", "run_end"]

# A command with no reply yet looks at the serving process's heartbeat this
# often (seconds); a beat older than SERVED_WITHIN (three of the server's
# one-second beats, runtime/commands.py) means no process serves the store:
# NotServed, instead of waiting out the timeout.
SERVED_CHECK_SECONDS = 1.0
SERVED_WITHIN = 3.0

Reply = tuple[bool, str | None]


def not_served(queue: CommandQueue | PostgresCommandQueue) -> str | None:
    """How long ago a process last served the store, in words; None while one serves it."""
    ago = queue.served_ago()
    if ago is None:
        return "no serving process has it open"
    if ago <= SERVED_WITHIN:
        return None
    return f"the last serving heartbeat was {ago:.1f}s ago"


async def command_reply(
    queue: CommandQueue | PostgresCommandQueue,
    wakes: ClientWakes | None,
    command_id: str,
    submit: Callable[[], object],
    deadline: float,
) -> Reply | None:
    """Queue the command (`submit`, idempotent) and await its reply; None when `deadline` (loop time) passed.

    `submit` returns True when it queued the row just now (not when an
    earlier call or a retry under the same id did: its reply may be there).

    On a file the command is queued before the server is told (its datagram
    sends the applier looking); on Postgres the client listens first, so the
    reply's notice cannot come before it hears.
    """
    if isinstance(queue, CommandQueue):
        submit()
    with watching(queue, wakes, command_id, queue.data_version, command=True) as pause:
        queued_now = submit() is True
        # Listening since before the row was queued: the reply's notice comes
        # after it commits, so a read before it would find nothing.
        if (
            queued_now
            and isinstance(pause, NoticePause)
            and pause.notified
            and not await pause.pause(deadline, REPLY_POLL_SECONDS)
        ):
            return None
        while True:
            # The reply's notice carries the reply (committed with it): no read.
            heard = pause.reply() if isinstance(pause, NoticePause) else None
            got = (True, heard) if heard is not None else queue.reply(command_id)
            if got is not None and got[0]:
                return got
            if not await pause.pause(deadline, REPLY_POLL_SECONDS):
                return None


async def run_end(
    reader: SqliteReader | PostgresReader,
    queue: CommandQueue | PostgresCommandQueue,
    wakes: ClientWakes | None,
    exec_id: str,
    deadline: float | None,
) -> tuple[str, ExecutionDetail | None]:
    """Await the end of the chain from `exec_id`: (last run's id, its detail, None on timeout).

    Follows continue-as-new and retry successors to the last run. On a
    file each run is read once before it is watched: one that ended already
    (a signal's reply came in the commit that ended it) needs no wake, so
    the client sends the serving process no datagram (which would wake it).
    On Postgres a watch costs no round trip: it is read inside the watch only.
    """
    current = exec_id
    while True:
        detail = (
            _described(reader, current) if isinstance(queue, CommandQueue) else None
        )
        if detail is not None and detail.successor is not None:
            current = str(detail.successor)
            continue
        if detail is not None and detail.state not in _LIVE:
            return current, detail
        with watching(queue, wakes, current, reader.data_version) as pause:
            while True:
                detail = _described(reader, current)
                if detail is None:  # a held start: its run has not started yet
                    if not await pause.pause(deadline, RESULT_POLL_SECONDS):
                        return current, None
                    continue
                if detail.successor is not None:
                    current = str(detail.successor)
                    break
                if detail.state not in _LIVE:
                    return current, detail
                if not await pause.pause(deadline, RESULT_POLL_SECONDS):
                    return current, None


# A run waiting in its queue has not ended either.
_LIVE = frozenset({"RUNNING", "ENQUEUED"})


def _described(
    reader: SqliteReader | PostgresReader, exec_id: str
) -> ExecutionDetail | None:
    """The run's detail; None while `exec_id` is a held start (debounce, batch) not started yet.

    Raises:
        ExecutionNotFound: no run has the id and none will.
    """
    try:
        return reader.describe(exec_id)
    except ExecutionNotFound:
        if reader.is_held(exec_id):
            return None
        raise
