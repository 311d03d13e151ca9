"""The SSE writer: offsets as event ids, where a stream starts, keep-alives while quiet, the end event."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from harvest_engine.http import sse
from harvest_engine.http.errors import HttpRefusal
from tests.http.served_api import uvicorn_on_free_port
from tests.http.sse_client import Event, events, lines_of

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.requests import Request
    from starlette.responses import Response


async def test_values_arrive_as_they_are_written_with_keepalives_between_and_an_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sse, "KEEPALIVE_SECONDS", 0.05)
    written: asyncio.Queue[tuple[int, Any] | None] = asyncio.Queue()

    async def items() -> AsyncIterator[tuple[int, Any]]:
        while (item := await written.get()) is not None:
            yield item

    async def stream(request: Request) -> Response:
        return sse.sse_response(items(), sse.start_offset(request, None))

    app = Starlette(routes=[Route("/s", stream)])
    async with (
        uvicorn_on_free_port(app) as base,
        httpx.AsyncClient(base_url=base) as http,
        http.stream("GET", "/s") as response,
    ):
        lines = lines_of(response)
        assert await anext(lines) == ": harvest stream"
        assert await anext(lines) == ""
        assert await anext(lines) == ": keep-alive"  # quiet: the connection is kept
        await written.put((3, {"pct": 10}))
        got: list[str] = []
        while "data" not in "".join(got):
            got.append(await anext(lines))
        assert got[-2:] == ["id: 3", 'data: {"pct":10}']
        await written.put((4, "done"))
        await written.put(None)
        rest = [e async for e in events(lines)]
    assert rest == [Event(4, "message", "done"), Event(None, "end", {"offset": 5})]


def test_a_stream_starts_after_last_event_id_else_at_offset() -> None:
    def request(headers: dict[str, str]) -> Any:
        return httpx.Request("GET", "http://x/", headers=headers)

    assert sse.start_offset(request({}), None) == 0
    assert sse.start_offset(request({}), "7") == 7
    assert sse.start_offset(request({"Last-Event-ID": "4"}), "7") == 5
    for bad in ("-1", "x", "1.5"):
        with pytest.raises(HttpRefusal) as refused:
            sse.start_offset(request({"Last-Event-ID": bad}), None)
        assert refused.value.status == 422
        with pytest.raises(HttpRefusal):
            sse.start_offset(request({}), bad)
