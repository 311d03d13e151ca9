"""The routes that read flow control: queues, held starts and circuit breakers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.http import views
from harvest_engine.http.table import Endpoint

if TYPE_CHECKING:
    from harvest_engine.http.table import Call


async def queues(call: Call) -> Any:
    """Each queue as `harvest queues --json` prints it."""
    return [q.to_json() for q in call.target.queues()]


async def held_starts(call: Call) -> Any:
    """The debounced and batched starts waiting for their window, earliest due first."""
    return views.plain(call.target.held_starts())


async def circuit_breakers(call: Call) -> Any:
    """Each activity circuit breaker that has seen a failure: its state now."""
    return views.plain(call.target.circuit_breakers())


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/queues", "List flow queues", queues, "flow"),
    Endpoint("GET", "/held-starts", "List held starts", held_starts, "flow"),
    Endpoint(
        "GET", "/circuit-breakers", "List circuit breakers", circuit_breakers, "flow"
    ),
)
