"""The routes about the store as a whole: health, run counts, and the OpenAPI document."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.http.table import Endpoint

if TYPE_CHECKING:
    from harvest_engine.http.table import Call


async def health(call: Call) -> Any:
    """Whether a process serves the store (`served`), and what the API acts on."""
    return call.target.health()


async def counts(call: Call) -> Any:
    """How many runs are in each state."""
    return call.target.reads.counts_by_state()


async def openapi(call: Call) -> Any:
    """This document: every route of the API, written from its route table."""
    return call.request.app.state.harvest_openapi


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/health", "Health", health, "service"),
    Endpoint("GET", "/counts", "Runs per state", counts, "service"),
    Endpoint("GET", "/openapi.json", "The OpenAPI document", openapi, "service"),
)
