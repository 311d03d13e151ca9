"""The OpenAPI 3.1 document of the API, written from the route table (so it cannot drift from it)."""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING, Any

from harvest_engine import __version__

if TYPE_CHECKING:
    from collections.abc import Iterable

    from harvest_engine.http.table import Endpoint, Field

_PATH_PARAM = re.compile(r"\{(\w+)\}")

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["type", "message", "fields", "status"],
            "properties": {
                "type": {"type": "string", "description": "the error's class name"},
                "message": {"type": "string"},
                "fields": {"type": "object", "description": "its structured fields"},
                "status": {"type": "integer"},
            },
        }
    },
}


_ERROR_REF = {"$ref": "#/components/schemas/Error"}


def _body(fields: tuple[Field, ...]) -> dict[str, Any]:
    properties = {f.name: {**f.schema, "description": f.description} for f in fields}
    required = [f.name for f in fields if f.required]
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return {
        "required": bool(required),
        "content": {"application/json": {"schema": schema}},
    }


def operation(endpoint: Endpoint, secured: bool) -> dict[str, Any]:
    """One endpoint as an OpenAPI operation."""
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _PATH_PARAM.findall(endpoint.path)
    ]
    for param in endpoint.params:
        schema: dict[str, Any] = {"type": param.schema}
        if param.repeat:
            schema = {"type": "array", "items": schema}
        parameters.append(
            {
                "name": param.name,
                "in": "query",
                "description": param.description,
                "schema": schema,
                **({"style": "form", "explode": True} if param.repeat else {}),
            }
        )
    media = "text/event-stream" if endpoint.stream else "application/json"
    found: dict[str, Any] = {
        "operationId": f"{endpoint.tag}_{endpoint.handler.__name__}",
        "summary": endpoint.summary,
        "description": inspect.getdoc(endpoint.handler) or endpoint.summary,
        "tags": [endpoint.tag],
        "parameters": parameters,
        "responses": {
            str(endpoint.status): {
                "description": endpoint.summary,
                "content": {media: {"schema": {}}},
            },
            "default": {
                "description": "a refusal: the status says its family, the body its type",
                "content": {"application/json": {"schema": _ERROR_REF}},
            },
        },
        "x-harvest-write": endpoint.write,
    }
    if endpoint.body:
        found["requestBody"] = _body(endpoint.body)
    if secured:
        found["security"] = [{"bearer": []}]
    return found


def document(endpoints: Iterable[Endpoint], *, secured: bool) -> dict[str, Any]:
    """The whole document: every endpoint of the table under its path and method."""
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        paths.setdefault(endpoint.full_path, {})[endpoint.method.lower()] = operation(
            endpoint, secured
        )
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "harvest management API",
            "version": __version__,
            "description": "List, inspect and act on the runs of a harvest store.",
        },
        "paths": paths,
    }
    components: dict[str, Any] = {"schemas": {"Error": _ERROR}}
    if secured:
        components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    doc["components"] = components
    return doc
