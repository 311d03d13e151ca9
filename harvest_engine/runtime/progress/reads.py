"""Reading a run's events and streams in the runtime's own process, waiting for what is not there yet.

A waiter enters `engine.changes.watch()` before it reads, so a commit of
this runtime after the read wakes it at once, and on Postgres so does
another worker's (its NOTIFY, heard by the runtime's LISTEN connection);
it re-reads every `RECHECK_SECONDS` besides. A reader never sees what a rolled-back decision wrote:
the rows are written in the decision's transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from harvest_engine.durations import to_timedelta
from harvest_engine.names import check_key
from harvest_engine.store.sql.progress import STREAM_PAGE

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from harvest_engine.durations import Duration
    from harvest_engine.runtime.engine import Engine
    from harvest_engine.states import ExecutionId

# How often a waiting reader reads again without being woken (seconds).
RECHECK_SECONDS = 0.25


def events(engine: Engine, exec_id: str | ExecutionId) -> dict[str, Any]:
    """Every event the run set: key to its last value ({} when none)."""
    return engine.store.run_events(engine.require(exec_id))


async def get_event(
    engine: Engine,
    exec_id: str | ExecutionId,
    key: str,
    timeout: Duration | None,  # noqa: ASYNC109 - API.md's contract
) -> Any:
    """Event `key`'s value once the run sets it; None when the run ends without it or `timeout` passes."""
    text = engine.require(exec_id)
    key = check_key(key, "event key")
    deadline = _deadline(timeout)
    store = engine.store
    with engine.changes.watch() as changed:
        while True:
            found, value = store.run_event(text, key)
            if found:
                return value
            if not _running(engine, text):
                found, value = store.run_event(text, key)  # set as it ended
                return value if found else None
            if not await _pause(changed, deadline):
                return None


def read_stream(
    engine: Engine, exec_id: str | ExecutionId, key: str, offset: int
) -> AsyncIterator[tuple[int, Any]]:
    """Stream `key`'s values from `offset` on, as (offset, value), each once, in order.

    Ends when the stream is closed, or when the run has ended and every
    value it wrote was read. The run, key and offset are checked here, at
    the call, not at the first iteration.
    """
    text = engine.require(exec_id)
    return _stream(engine, text, check_key(key, "stream key"), check_offset(offset))


async def _stream(
    engine: Engine, text: str, key: str, position: int
) -> AsyncIterator[tuple[int, Any]]:
    store = engine.store
    with engine.changes.watch() as changed:
        while True:
            ended = not _running(engine, text)
            items = store.stream_items(text, key, position)
            for item in items:
                if item.closed:
                    return
                yield item.position, item.value
                position = item.position + 1
            if len(items) == STREAM_PAGE:
                continue
            if ended:
                return  # read after the end was seen: nothing more can come
            await _pause(changed, None)


def check_offset(offset: object) -> int:
    """A stream offset: a whole number >= 0 (ValueError otherwise)."""
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"a stream offset is a whole number >= 0, got {offset!r}")
    return offset


def _running(engine: Engine, exec_id: str) -> bool:
    row = engine.store.execution(exec_id)
    return row is not None and row.state == "RUNNING"


def _deadline(timeout: Duration | None) -> float | None:
    if timeout is None:
        return None
    seconds = to_timedelta(timeout, what="timeout").total_seconds()
    return asyncio.get_running_loop().time() + seconds


async def _pause(changed: asyncio.Event, deadline: float | None) -> bool:
    """Wait for a commit (or the re-check); False once past `deadline`."""
    limit = RECHECK_SECONDS
    if deadline is not None:
        left = deadline - asyncio.get_running_loop().time()
        if left <= 0:
            return False
        limit = min(limit, left)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(limit):
            await changed.wait()
    changed.clear()
    return True
