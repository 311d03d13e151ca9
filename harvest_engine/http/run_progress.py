"""The progress routes of a run: its events (all, or one waited for) and its streams as Server-Sent Events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.durations import to_seconds
from harvest_engine.http.sse import sse_response, start_offset
from harvest_engine.http.table import Endpoint, Param

if TYPE_CHECKING:
    from harvest_engine.http.table import Call

MAX_EVENT_WAIT = 60.0
"""The longest an event request waits (seconds): a long poll, not a held connection."""


async def events(call: Call) -> Any:
    """Every event the run set with `ctx.set_event`: key to its last value."""
    return call.target.reads.events(call.exec_id)


async def event(call: Call) -> Any:
    """One event: its value once the run sets it (a long poll up to `timeout`).

    `set` is false when the run ended without it or the wait ran out.
    """
    text = call.one("timeout")
    seconds = (
        0.0 if text is None else min(to_seconds(text, what="timeout"), MAX_EVENT_WAIT)
    )
    key = call.path["key"]
    value = await call.target.get_event(call.exec_id, key, seconds)
    found = key in call.target.reads.events(call.exec_id)
    return {"key": key, "value": value, "set": found}


async def stream(call: Call) -> Any:
    """The stream's values as Server-Sent Events, each once, in order (id: its offset).

    Starts after ``Last-Event-ID`` when the client sends one (a reconnect),
    else at ``?offset=`` (0); ends with an ``end`` event once the stream
    closes or the run ends.
    """
    first = start_offset(call.request, call.one("offset"))
    items = call.target.read_stream(call.exec_id, call.path["key"], first)
    return sse_response(items, first)


_RUN = "/runs/{exec_id}"

ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", f"{_RUN}/events", "A run's events", events, "progress"),
    Endpoint(
        "GET",
        f"{_RUN}/events/{{key}}",
        "Wait for one event of a run",
        event,
        "progress",
        params=(
            Param(
                "timeout",
                "string",
                f"how long to wait for it (e.g. 5s; default 0, at most {MAX_EVENT_WAIT:g}s)",
            ),
        ),
    ),
    Endpoint(
        "GET",
        f"{_RUN}/streams/{{key}}",
        "Follow a run's stream (Server-Sent Events)",
        stream,
        "progress",
        params=(Param("offset", "integer", "the first offset to send (default 0)"),),
        stream=True,
    ),
)
