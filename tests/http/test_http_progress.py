"""Events and streams over HTTP: an SSE client follows a run's stream while it writes, across a server restart."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from harvest_engine.http import create_app
from tests.http.served_api import uvicorn_on_free_port
from tests.http.sse_client import Event, events, lines_of

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.http.served_api import ApiSetup

PAIRS = pytest.mark.parametrize(
    ("store", "via"), [("sqlite", "runtime"), ("postgres", "client")]
)


async def _take(stream: AsyncIterator[Event], n: int) -> list[Event]:
    async with asyncio.timeout(10):
        return [await anext(stream) for _ in range(n)]


async def _emit(http: httpx.AsyncClient, exec_id: str, n: int | None) -> None:
    got = await http.post(f"/runs/{exec_id}/signals/emit", json={"payload": n})
    assert got.status_code == 200, got.text


@PAIRS
async def test_an_sse_client_follows_a_stream_and_resumes_after_a_server_restart(
    api_setup: ApiSetup,
) -> None:
    served = api_setup.served
    target: Any = served.rt if api_setup.via == "runtime" else served.where
    seen: list[Event] = []
    async with served.serving():
        async with (
            uvicorn_on_free_port(create_app(target)) as base,
            httpx.AsyncClient(base_url=f"{base}/api/v1", timeout=10) as http,
        ):
            started = await http.post("/runs", json={"workflow": "reporter"})
            exec_id = started.json()["exec_id"]
            path = f"/runs/{exec_id}/streams/progress"
            async with http.stream("GET", path) as response:
                stream = events(lines_of(response))
                await _emit(http, exec_id, 3)  # written while the client reads
                seen += await _take(stream, 3)
            await _emit(http, exec_id, 2)  # written while no server runs below
        # The API server is gone and a new one starts (a new app, a new port).
        async with (
            uvicorn_on_free_port(create_app(target)) as base,
            httpx.AsyncClient(base_url=f"{base}/api/v1", timeout=10) as http,
        ):
            last = {"Last-Event-ID": str(seen[-1].id)}
            async with http.stream("GET", path, headers=last) as response:
                stream = events(lines_of(response))
                seen += await _take(stream, 2)
                await _emit(http, exec_id, 1)
                seen += await _take(stream, 1)
                await _emit(http, exec_id, None)  # the run closes the stream
                end = await _take(stream, 1)
            again = await http.get(path, params={"offset": 4})
            replay = [e async for e in events(again.aiter_lines())]
    assert [(e.id, e.data) for e in seen] == [(i, {"step": i}) for i in range(6)]
    assert end == [Event(None, "end", {"offset": 6})]
    assert [e.id for e in replay] == [4, 5, None]  # a closed stream reads to its end


@PAIRS
async def test_events_read_all_and_one_waited_for(api_setup: ApiSetup) -> None:
    async with api_setup.running() as api:
        exec_id = (
            await api.call("POST", "/runs", json={"workflow": "reporter"}, status=201)
        )["exec_id"]
        none = await api.call("GET", f"/runs/{exec_id}/events/phase", status=200)
        assert none == {"key": "phase", "value": None, "set": False}
        waiting = asyncio.create_task(
            api.call(
                "GET",
                f"/runs/{exec_id}/events/phase",
                params={"timeout": "10s"},
                status=200,
            )
        )
        await _emit(api.http, exec_id, 1)
        assert await waiting == {"key": "phase", "value": "writing", "set": True}
        assert await api.call("GET", f"/runs/{exec_id}/events", status=200) == {
            "phase": "writing"
        }
        for bad in ({"timeout": "soon"}, {"wait": "1s"}):
            got = await api.call(
                "GET", f"/runs/{exec_id}/events/phase", params=bad, status=422
            )
            assert got["error"]["status"] == 422
        gone = "/runs/00000000-0000-0000-0000-000000000000"
        for part in ("/events", "/events/phase", "/streams/progress"):
            got = await api.call("GET", gone + part, status=404)
            assert got["error"]["type"] == "ExecutionNotFound"
        bad_offset = await api.call(
            "GET",
            f"/runs/{exec_id}/streams/progress",
            params={"offset": "-1"},
            status=422,
        )
        assert bad_offset["error"]["type"] == "InvalidOffset"
