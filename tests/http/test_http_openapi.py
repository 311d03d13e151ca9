"""The OpenAPI document is written from the route table: every route is in it, and nothing else."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from starlette.routing import Route

from harvest_engine import SqliteRuntime
from harvest_engine.http import create_app
from harvest_engine.http.routes import ENDPOINTS

if TYPE_CHECKING:
    from collections.abc import Iterator


def _served_routes() -> Iterator[tuple[str, str]]:
    with SqliteRuntime.open_in_memory() as rt:
        app = create_app(rt)
        for route in app.routes:
            assert isinstance(route, Route)
            for method in route.methods or ():
                if method != "HEAD":
                    yield method, route.path


def test_every_served_route_is_in_the_document_and_every_documented_one_is_served() -> (
    None
):
    with SqliteRuntime.open_in_memory() as rt:
        doc = create_app(rt).state.harvest_openapi
    documented = {
        (method.upper(), path) for path, ops in doc["paths"].items() for method in ops
    }
    served = set(_served_routes())
    assert documented == served
    assert len(served) == len(ENDPOINTS)
    assert ("GET", "/api/v1/openapi.json") in served
    assert all(path.startswith("/api/v1/") for _, path in served)


def test_each_operation_names_its_path_parameters_body_and_write_flag() -> None:
    with SqliteRuntime.open_in_memory() as rt:
        doc = create_app(rt, token="t").state.harvest_openapi
    assert doc["openapi"].startswith("3.1")
    ids = [op["operationId"] for ops in doc["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))
    for path, ops in doc["paths"].items():
        for op in ops.values():
            declared = {p["name"] for p in op["parameters"] if p["in"] == "path"}
            assert declared == set(re.findall(r"\{(\w+)\}", path))
            assert op["security"] == [{"bearer": []}]
            assert op["responses"]["default"]["content"]["application/json"]["schema"]
    start = doc["paths"]["/api/v1/runs"]["post"]
    schema = start["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["workflow"]
    assert schema["additionalProperties"] is False
    # StartOptions' fields, read from the dataclass: an option it gains shows here.
    assert {"workflow_id", "memo", "search_attributes", "reuse_policy"} <= set(
        schema["properties"]
    )
    assert schema["properties"]["reuse_policy"]["enum"][0] == "ALLOW_DUPLICATE"
    assert start["x-harvest-write"] is True
    assert doc["paths"]["/api/v1/runs"]["get"]["x-harvest-write"] is False
    state = next(
        p
        for p in doc["paths"]["/api/v1/runs"]["get"]["parameters"]
        if p["name"] == "state"
    )
    assert state["schema"] == {"type": "array", "items": {"type": "string"}}
