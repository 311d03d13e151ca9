"""Serving a file's wake channel: a client's datagram wakes the command applier, each commit the clients.

The store's end of the channel (store/sqlite/wake_channel.py) is read by
the serving loop; after every commit of this process it sends each client
heard lately one byte, so a client waiting on a reply, a run's end, an
event or a stream reads at once instead of at its next poll.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import TYPE_CHECKING

from harvest_engine.errors import HarvestError
from harvest_engine.loop_readers import read_when_ready

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.store.protocol import CommitWatcher, DurableStore


def serve_wake_channel(
    store: DurableStore, on_command: Callable[[], None]
) -> Callable[[], None] | None:
    """Serve the store's wake channel on the running loop; what closes it, or None without one.

    `on_command` runs when a client says it queued a command. None where the
    store has no channel (Postgres's NOTIFY does the same; an in-memory
    database has no clients; a loop without readers): clients poll.
    """
    try:
        channel = store.open_wake_channel()
    except HarvestError:
        channel = None
    if channel is None:
        return None
    loop = asyncio.get_running_loop()

    def heard() -> None:
        if channel.heard():
            on_command()

    if not read_when_ready(loop, channel.fd, heard):
        channel.close()
        return None
    remove = store.add_commit_listener(channel.committed)

    def close() -> None:
        remove()
        with suppress(OSError, ValueError, RuntimeError):
            loop.remove_reader(channel.fd)
        channel.close()

    return close


def drain_then(watch: CommitWatcher, then: Callable[[], object]) -> None:
    """The serving loop's reader of its commit watch: drain the events, then `then()`.

    Drained at once: a reader is level-triggered, so events left unread (the
    server's own commits while it sleeps its poll tick) would run it on
    every turn of the event loop, a core spinning until the tick ends.
    """
    watch.drain()
    then()
