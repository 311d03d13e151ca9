"""A client's reads of a run's events and streams, waiting (woken by the commit) for what is not there yet.

The same rules as the runtime's own (runtime/progress/reads.py), read
through the client's read-only connection: `get_event` returns once the
run sets the key (None when it ends without it, or at the timeout), and
`read_stream` yields each value once, in order, until the stream closes or
the run ends. The waits are the client's (wakes.py): the serving process
wakes them right after its commit; polling stays the fallback.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from harvest_engine.client.wakes import watching
from harvest_engine.durations import to_timedelta
from harvest_engine.store.sql.progress import STREAM_PAGE

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from harvest_engine.client.wakes import ClientWakes
    from harvest_engine.durations import Duration
    from harvest_engine.store.postgres.client_queue import PostgresCommandQueue
    from harvest_engine.store.postgres.reader import PostgresReader
    from harvest_engine.store.sqlite.client_queue import CommandQueue
    from harvest_engine.store.sqlite.reader import SqliteReader

# How often a reader without wakes (no channel, notices down) reads again.
POLL_SECONDS = 0.005


def checked_offset(offset: object) -> int:
    """A stream offset: a whole number >= 0 (ValueError otherwise)."""
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"a stream offset is a whole number >= 0, got {offset!r}")
    return offset


async def get_event(
    reader: SqliteReader | PostgresReader,
    queue: CommandQueue | PostgresCommandQueue,
    wakes: ClientWakes | None,
    exec_id: str,
    key: str,
    timeout: Duration | None,  # noqa: ASYNC109 - API.md's contract
) -> Any:
    """Event `key` once set; None when the run ends without it or `timeout` passes."""
    loop = asyncio.get_running_loop()
    deadline = (
        None
        if timeout is None
        else loop.time() + to_timedelta(timeout, what="timeout").total_seconds()
    )
    with watching(queue, wakes, exec_id, reader.data_version) as pause:
        while True:
            found, value = reader.event(exec_id, key)
            if found:
                return value
            if reader.describe(exec_id).state != "RUNNING":
                found, value = reader.event(exec_id, key)
                return value if found else None
            if not await pause.pause(deadline, POLL_SECONDS):
                return None


async def read_stream(
    reader: SqliteReader | PostgresReader,
    queue: CommandQueue | PostgresCommandQueue,
    wakes: ClientWakes | None,
    exec_id: str,
    key: str,
    position: int,
) -> AsyncIterator[tuple[int, Any]]:
    """Stream `key`'s values from `position` on, each once, in order, until it closes or the run ends."""
    with watching(queue, wakes, exec_id, reader.data_version) as pause:
        while True:
            ended = reader.describe(exec_id).state != "RUNNING"
            items = reader.stream_items(exec_id, key, position)
            for item in items:
                if item.closed:
                    return
                yield item.position, item.value
                position = item.position + 1
            if len(items) == STREAM_PAGE:
                continue
            if ended:
                return
            await pause.pause(None, POLL_SECONDS)
