"""Bad input and security: every refusal has its status and JSON error body, and writes nothing."""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine.http import inputs
from harvest_engine.http.routes import ENDPOINTS

if TYPE_CHECKING:
    from tests.http.served_api import Api, ApiSetup

TOKEN = "tok-3f9a"

# The HTTP layer's own checks come before any call of the target: one store and
# one target are enough for them; the refusals that reach the target run on more.
HTTP_LAYER = pytest.mark.parametrize(("store", "via"), [("sqlite", "runtime")])


async def _raw_head(api: Api, rest: bytes) -> bytes:
    """The response head to a start whose headers end with `rest` (and never more body)."""
    host, port = api.base.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(
            b"POST /api/v1/runs HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\n" + rest
        )
        await writer.drain()
        return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    finally:
        writer.close()


@HTTP_LAYER
async def test_the_token_unknown_routes_wrong_methods_and_slow_bodies(
    api_setup: ApiSetup, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inputs, "BODY_SECONDS", 0.3)
    async with api_setup.running(token=TOKEN) as api:
        for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": TOKEN}):
            for path in ("/health", "/runs", "/no-such-route"):
                got = await api.http.get(path, headers=headers)
                assert got.status_code == 401, (headers, path)
                assert got.json()["error"]["type"] == "Unauthorized"
                assert got.headers["www-authenticate"].startswith("Bearer")
        assert (
            await api.http.post("/runs", json={"workflow": "box"})
        ).status_code == 401
        assert api.stored_rows() == (0, 0, 0)
        api.http.headers["Authorization"] = f"Bearer {TOKEN}"
        assert (await api.call("GET", "/health", status=200))["served"] is True
        doc = await api.call("GET", "/openapi.json", status=200)
        assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
        assert (await api.call("GET", "/nowhere", status=404))["error"][
            "type"
        ] == "NotFound"
        wrong = await api.call("DELETE", "/runs", status=405)
        assert wrong["error"]["type"] == "MethodNotAllowed"
        allow = (await api.http.put("/health")).headers["allow"]
        assert "GET" in allow
        outside = await api.http.get(f"{api.base}/api/v2/runs")
        assert outside.status_code == 404
        cross = await api.http.post(
            "/runs",
            json={"workflow": "box"},
            headers={"Origin": "https://evil.example"},
        )
        assert cross.status_code == 403
        assert cross.json()["error"]["type"] == "CrossOrigin"
        assert api.stored_rows() == (0, 0, 0)
        own = {"Origin": api.base}  # a page this same server served
        await api.call("POST", "/runs/x/cancel", headers=own, status=404)
        auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
        head = await _raw_head(api, auth + b'Content-Length: 100\r\n\r\n{"workflow"')
        assert head.startswith(b"HTTP/1.1 408"), head
        assert api.stored_rows() == (0, 0, 0)


@HTTP_LAYER
async def test_bodies_that_are_no_json_object_of_the_routes_members_are_refused(
    api_setup: ApiSetup,
) -> None:
    deep: Any = []
    for _ in range(150):
        deep = [deep]
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"content": b"{nope"}, 422, "PayloadNotJson"),
        ({"json": ["greet"]}, 422, "InvalidBody"),
        ({"json": {"workflow": "greet", "colour": 1}}, 422, "InvalidBody"),
        ({"json": {"workflow": 7}}, 422, "InvalidBody"),
        ({"json": {"input": "ann"}}, 422, "InvalidBody"),
        (
            {"content": b"workflow=greet", "headers": {"content-type": "text/plain"}},
            415,
            "UnsupportedMediaType",
        ),
        ({"content": b'{"workflow": "greet", "input": NaN}'}, 422, "PayloadNotJson"),
        ({"content": b"[" * 5000 + b"]" * 5000}, 422, "PayloadTooDeep"),
        ({"json": {"workflow": "greet", "input": deep}}, 422, "PayloadTooDeep"),
        # Under the body limit but over the runtime's payload cap: its own check.
        ({"json": {"workflow": "greet", "input": "x" * 2**21}}, 413, "PayloadTooLarge"),
        (
            {"json": {"workflow": "greet", "input": "x" * (inputs.MAX_BODY_BYTES + 1)}},
            413,
            "PayloadTooLarge",
        ),
    ]
    async with api_setup.running() as api:
        for kwargs, status, kind in cases:
            got = await api.call("POST", "/runs", status=status, **kwargs)
            assert (got["error"]["type"], got["error"]["status"]) == (kind, status)
            assert api.stored_rows() == (0, 0, 0), kind
        assert (
            await api.call(
                "POST", "/runs", status=422, json={"workflow": "greet", "input": 2**70}
            )
        )["error"]["type"] == "PayloadNotJson"
        # A declared length over the limit is refused before the body is read.
        head = await _raw_head(api, b"Content-Length: 1000000000\r\n\r\n{")
        assert head.startswith(b"HTTP/1.1 413"), head
        assert api.stored_rows() == (0, 0, 0)
        await api.call(
            "POST", "/runs", json={"workflow": "greet", "input": [[[]]]}, status=201
        )


def _concrete(path: str, exec_id: str) -> str:
    """A route's path with each parameter filled in."""
    return re.sub(r"\{\w+\}", "box", path.replace("{exec_id}", exec_id))


@pytest.mark.parametrize("store", ["sqlite"])
async def test_a_read_only_app_refuses_every_write_route_with_403_and_writes_nothing(
    api_setup: ApiSetup,
) -> None:
    async with api_setup.running() as api:
        exec_id = (
            await api.call("POST", "/runs", json={"workflow": "box"}, status=201)
        )["exec_id"]
    async with api_setup.running(read_only=True) as api:
        before = api.stored_rows()
        writes = [e for e in ENDPOINTS if e.write]
        assert {e.path for e in writes} >= {"/runs", "/runs/{exec_id}/cancel"}
        for endpoint in writes:
            path = _concrete(endpoint.path, exec_id)
            got = await api.call(endpoint.method, path, json={}, status=403)
            assert got["error"]["type"] == "ReadOnly", endpoint.path
        assert api.stored_rows() == before
        run = await api.call("GET", f"/runs/{exec_id}", status=200)
        assert run["state"] == "RUNNING"
        # A query changes nothing of the run: a read-only app answers it.
        peek = await api.call("POST", f"/runs/{exec_id}/queries/peek", status=200)
        assert peek == {"result": {"items": []}}


@pytest.mark.parametrize("via", ["client"])  # a runtime applies its calls itself
async def test_with_no_serving_process_a_client_command_is_503_not_served(
    api_setup: ApiSetup,
) -> None:
    api_setup.served.rt.close()  # no process holds the store
    async with api_setup.running(serve=False) as api:
        assert (await api.call("GET", "/health", status=200))["served"] is False
        got = await api.call("POST", "/runs", json={"workflow": "greet"}, status=503)
        assert got["error"]["type"] == "NotServed"
        assert got["error"]["fields"]["command_id"]
