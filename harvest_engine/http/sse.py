"""Server-Sent Events: a run's stream as ``text/event-stream``, each value an event whose id is its offset.

A browser's EventSource (or any SSE client) reconnects with the last id it
saw in ``Last-Event-ID``, and the stream resumes right after it: nothing
lost, nothing repeated. While the run writes nothing a comment line keeps
the connection (and any proxy on the way) alive; when the stream closes or
the run ends, an ``end`` event says so, with the offset to resume from.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from starlette.responses import StreamingResponse

from harvest_engine import payloads
from harvest_engine.http.errors import HttpRefusal

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.requests import Request

KEEPALIVE_SECONDS = 15.0
"""How long a quiet stream goes before a keep-alive comment."""

_DONE = object()


def start_offset(request: Request, offset: str | None) -> int:
    """Where a stream starts: after ``Last-Event-ID`` (a reconnect), else ``?offset=``, else 0."""
    last = request.headers.get("last-event-id")
    if last is not None and last.strip():
        return _whole(last, "Last-Event-ID") + 1
    return 0 if offset is None else _whole(offset, "offset")


def _whole(text: str, what: str) -> int:
    value = text.strip()
    if not value.isdigit():
        raise HttpRefusal(
            422,
            "InvalidOffset",
            f"{what} is a stream offset (0, 1, 2, ...), got {text!r}",
        )
    return int(value)


def event(offset: int, value: Any) -> bytes:
    """One value as an SSE event: its offset as the id, its JSON as the data (one line)."""
    return b"id: %d\ndata: %s\n\n" % (offset, payloads.dumpb(value))


def end_event(next_offset: int) -> bytes:
    """The last event of a stream that closed or whose run ended."""
    return b"event: end\ndata: %s\n\n" % payloads.dumpb({"offset": next_offset})


async def _events(
    items: AsyncIterator[tuple[int, Any]], first: int
) -> AsyncIterator[bytes]:
    """The stream's events, with keep-alive comments while it is quiet.

    The values are read by a task of their own, so waiting out a quiet spell
    never cancels the reader mid-read; the task ends with the response (a
    client that went away included).
    """
    queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=64)

    async def pump() -> None:
        try:
            async for item in items:
                await queue.put(item)
        except Exception as exc:  # noqa: BLE001 - handed to the response, which ends
            await queue.put(exc)
        await queue.put(_DONE)

    reader = asyncio.create_task(pump())
    following = first
    try:
        yield b": harvest stream\n\n"  # the head goes out now, not at the first value
        while True:
            try:
                async with asyncio.timeout(KEEPALIVE_SECONDS):
                    got = await queue.get()
            except TimeoutError:
                yield b": keep-alive\n\n"
                continue
            if got is _DONE:
                yield end_event(following)
                return
            if isinstance(got, Exception):
                body = {"error": str(got), "type": type(got).__name__}
                yield b"event: error\ndata: %s\n\n" % payloads.dumpb(body)
                return
            offset, value = got
            following = offset + 1
            yield event(offset, value)
    finally:
        reader.cancel()
        await asyncio.wait([reader])  # its cancel done; a cancel of ours still ends us


def sse_response(
    items: AsyncIterator[tuple[int, Any]], first: int
) -> StreamingResponse:
    """The stream `items` (from offset `first`) as a ``text/event-stream`` response."""
    return StreamingResponse(
        _events(items, first),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
