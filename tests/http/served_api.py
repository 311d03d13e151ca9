"""The HTTP API under test: a served store of either store, create_app on it, a real uvicorn on a free port."""

from __future__ import annotations

import asyncio
import socket
from contextlib import asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import httpx
import uvicorn

from harvest_engine.http import create_app
from tests.http.flows import register

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.types import ASGIApp

    from tests.engine.served_store import ServedStore


@asynccontextmanager
async def uvicorn_on_free_port(app: ASGIApp, port: int = 0) -> AsyncIterator[str]:
    """Serve `app` with uvicorn on 127.0.0.1 (a free port unless given); its base URL."""
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say
    # so, and without it a kept-alive connection waits 40 ms for a delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    # A stream a test leaves open never holds the shutdown for long.
    config = uvicorn.Config(
        app,
        log_config=None,
        log_level="warning",
        ws="none",
        lifespan="on",
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
                raise AssertionError("uvicorn ended before it started")
            await asyncio.sleep(0.005)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


class Api:
    """A running API: its base URL, an HTTP client of it, and the store it serves."""

    def __init__(self, served: ServedStore, base: str, http: httpx.AsyncClient) -> None:
        self.served = served
        self.rt = served.rt
        self.base = base
        self.http = http

    async def call(self, method: str, path: str, *, status: int, **kwargs: Any) -> Any:
        """The JSON of `method path` (under /api/v1), asserting the status."""
        got = await self.http.request(method, path, **kwargs)
        assert got.status_code == status, (got.status_code, got.text)
        assert got.headers["content-type"] == "application/json"
        return got.json()

    def stored_rows(self) -> tuple[int, int, int]:
        """Runs, schedules and client command rows in the store: a refusal changes none."""
        return (
            self.served.rows("SELECT count(*) FROM harvest_executions")[0][0],
            self.served.rows("SELECT count(*) FROM harvest_schedules")[0][0],
            self.served.rows("SELECT count(*) FROM harvest_commands")[0][0],
        )


class ApiSetup:
    """A served store, registered with the test flows, and how the API reaches it."""

    def __init__(self, served: ServedStore, via: str) -> None:
        self.served = served
        self.via = via
        register(served.rt)

    @asynccontextmanager
    async def running(
        self, *, serve: bool = True, **options: Any
    ) -> AsyncIterator[Api]:
        """The store served, create_app on it (runtime or path), uvicorn, an httpx client.

        With ``serve=False`` no process serves the store (a client's commands
        are NotServed).
        """
        target = self.served.rt if self.via == "runtime" else self.served.where
        app = create_app(target, **options)
        async with (
            self.served.serving() if serve else nullcontext(),
            uvicorn_on_free_port(app) as base,
            httpx.AsyncClient(base_url=f"{base}/api/v1", timeout=10) as http,
        ):
            yield Api(self.served, base, http)
