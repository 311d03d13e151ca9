"""A browser-less Server-Sent Events client: the events of a ``text/event-stream`` response, parsed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import httpx


@dataclass(frozen=True)
class Event:
    """One event: its id (None when it has none), its type and its JSON data."""

    id: int | None
    type: str
    data: Any


def lines_of(response: httpx.Response) -> AsyncIterator[str]:
    """The lines of an event stream (read once: pass them on to `events`)."""
    assert response.headers["content-type"].startswith("text/event-stream")
    return response.aiter_lines()


async def events(lines: AsyncIterator[str]) -> AsyncIterator[Event]:
    """Each event of the stream's lines as it arrives (comment lines skipped), until it ends."""
    fields: dict[str, str] = {}
    async for line in lines:
        if line.startswith(":"):
            continue
        if line:
            name, _, value = line.partition(": ")
            fields[name] = value
            continue
        if "data" in fields:
            yield Event(
                int(fields["id"]) if "id" in fields else None,
                fields.get("event", "message"),
                json.loads(fields["data"]),
            )
        fields = {}
