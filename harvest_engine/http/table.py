"""The shape of the route table: an endpoint, its parameters and body fields, and the call a handler gets.

Each route is one `Endpoint` whose handler is one small async function of a
`Call`. The app (app.py) and the OpenAPI document (openapi.py) are both
written from the same table, so the document cannot drift from the routes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from harvest_engine.http.targets import Target

PREFIX = "/api/v1"
"""Every route of the API is under this path."""


@dataclass(frozen=True)
class Param:
    """A query parameter of a route.

    Attributes:
        name: its name in the query string.
        schema: its JSON schema type (``"string"``, ``"integer"``).
        description: what it selects, for the OpenAPI document.
        repeat: whether it may be given more than once.
    """

    name: str
    schema: str
    description: str
    repeat: bool = False


@dataclass(frozen=True)
class Field:
    """A member of a route's JSON body.

    Attributes:
        name: its key in the body object.
        schema: its JSON schema (``{"type": "string"}``; ``{}`` takes any JSON).
        description: what it is, for the OpenAPI document.
        required: whether the body must hold it.
    """

    name: str
    schema: dict[str, Any]
    description: str
    required: bool = False


@dataclass(frozen=True)
class Call:
    """One request, as a handler sees it: the target, path values, query and body.

    Attributes:
        target: what the API acts on (a runtime, or a client and a reader).
        path: the path parameters by name (``exec_id``, ``name``, ...).
        query: the query parameters, each name with every value given.
        body: the JSON body object, checked against the endpoint's fields.
        request: the Starlette request (headers, for a stream's Last-Event-ID).
    """

    target: Target
    path: dict[str, str]
    query: dict[str, list[str]]
    body: dict[str, Any]
    request: Request

    @property
    def exec_id(self) -> str:
        """The run the path names."""
        return self.path["exec_id"]

    def one(self, name: str) -> str | None:
        """A query parameter given at most once (its last value)."""
        values = self.query.get(name)
        return values[-1] if values else None


@dataclass(frozen=True)
class Endpoint:
    """One route: method and path, what it does, what it takes, and its handler.

    Attributes:
        method: ``GET``, ``POST``, ``PUT`` or ``DELETE``.
        path: under `PREFIX`, with ``{name}`` path parameters.
        summary: one line for the OpenAPI document.
        handler: the async function that answers (a JSON value, or a Response).
        tag: the group it is listed under (runs, schedules, ...).
        write: whether it changes the store (a read-only app refuses it, 403).
        params: its query parameters (any other is refused, 422).
        body: its body members (any other is refused, 422).
        status: the status of a success.
        stream: it answers with Server-Sent Events, not one JSON document.
    """

    method: str
    path: str
    summary: str
    handler: Callable[[Call], Awaitable[Any]]
    tag: str
    write: bool = False
    params: tuple[Param, ...] = ()
    body: tuple[Field, ...] = field(default=())
    status: int = 200
    stream: bool = False

    @property
    def full_path(self) -> str:
        """The path with the API prefix."""
        return PREFIX + self.path
