"""How a client awaits a command's reply and a run's end: notices on Postgres, a poll on SQLite.

On a file, another process's commit shows only as a new `data_version`:
the client reads it every few milliseconds and reads the reply (or the run)
only when it moved. On Postgres the transaction that writes the reply, or
seals the run, notifies the client (LISTEN/NOTIFY, client_notices.py), which
reads at once; it re-reads every `SAFETY_RECHECK_SECONDS` besides, and polls
as on a file while its LISTEN connection is down.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from harvest_engine.store.sqlite.client_queue import CommandQueue

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.store.postgres.client_notices import Watch
    from harvest_engine.store.postgres.client_queue import PostgresCommandQueue
    from harvest_engine.store.postgres.reader import PostgresReader
    from harvest_engine.store.records import ExecutionDetail
    from harvest_engine.store.sqlite.reader import SqliteReader

# How often a waiting client reads data_version (one cheap PRAGMA): the reply
# is read only when it moves. 2 ms keeps a command's round trip near the
# server's own poll without a busy loop.
REPLY_POLL_SECONDS = 0.002
RESULT_POLL_SECONDS = 0.005

# A client hearing notices still re-reads this often, in case one was missed.
SAFETY_RECHECK_SECONDS = 0.5

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
    command_id: str,
    submit: Callable[[], object],
    deadline: float,
) -> Reply | None:
    """Queue the command (`submit`) and await its reply; None when `deadline` (loop time) passed."""
    if isinstance(queue, CommandQueue):
        submit()
        return await _polled_reply(queue, command_id, deadline)
    with queue.watch(command_id) as watch:
        submit()
        while True:
            got = queue.reply(command_id)
            if got is not None and got[0]:
                return got
            if not await _pause(watch, deadline, REPLY_POLL_SECONDS):
                return None


async def _polled_reply(
    queue: CommandQueue, command_id: str, deadline: float
) -> Reply | None:
    loop = asyncio.get_running_loop()
    seen: int | None = None
    while True:
        version = queue.data_version()
        if version != seen:
            seen = version
            got = queue.reply(command_id)
            if got is not None and got[0]:
                return got
        if loop.time() >= deadline:
            return None
        await asyncio.sleep(REPLY_POLL_SECONDS)


async def run_end(
    reader: SqliteReader | PostgresReader,
    queue: CommandQueue | PostgresCommandQueue,
    exec_id: str,
    deadline: float | None,
) -> tuple[str, ExecutionDetail | None]:
    """Await the end of the chain from `exec_id`: (last run's id, its detail, None on timeout).

    Follows continue-as-new and retry successors to the last run.
    """
    if isinstance(queue, CommandQueue):
        return await _polled_end(reader, exec_id, deadline)
    current = exec_id
    while True:
        with queue.watch(current) as watch:
            while True:
                detail = reader.describe(current)
                if detail.successor is not None:
                    current = str(detail.successor)
                    break
                if detail.state not in _LIVE:
                    return current, detail
                if not await _pause(watch, deadline, RESULT_POLL_SECONDS):
                    return current, None


# A run waiting in its queue has not ended either.
_LIVE = frozenset({"RUNNING", "ENQUEUED"})


async def _polled_end(
    reader: SqliteReader | PostgresReader, exec_id: str, deadline: float | None
) -> tuple[str, ExecutionDetail | None]:
    loop = asyncio.get_running_loop()
    current = exec_id
    seen: int | None = None
    while True:
        version = reader.data_version()
        if version != seen:
            seen = version
            detail = reader.describe(current)
            if detail.successor is not None:
                current = str(detail.successor)
                seen = None
                continue
            if detail.state not in _LIVE:
                return current, detail
        if deadline is not None and loop.time() >= deadline:
            return current, None
        await asyncio.sleep(RESULT_POLL_SECONDS)


async def _pause(watch: Watch, deadline: float | None, poll: float) -> bool:
    """Wait for a notice (or the poll tick while notices are down); False once past `deadline`."""
    loop = asyncio.get_running_loop()
    now = loop.time()
    if deadline is not None and now >= deadline:
        return False
    pause = SAFETY_RECHECK_SECONDS if watch.live else poll
    if deadline is not None:
        pause = min(pause, deadline - now)
    await watch.wait(pause)
    return True
