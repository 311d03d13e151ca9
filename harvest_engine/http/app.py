"""create_app: the route table served as a Starlette app, behind a token and a read-only switch.

Every request passes the same gate before its handler: the bearer token
(401), the read-only switch for a write route (403), the query parameters
and the body (size 413, time 408, JSON object of the route's members 422);
then the handler's call raises typed errors that become statuses
(errors.py). Unknown routes (404) and wrong methods (405) answer with the
same JSON error body.
"""

from __future__ import annotations

import hmac
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.responses import Response
from starlette.routing import Route

from harvest_engine.http import openapi
from harvest_engine.http.errors import HttpRefusal, error_body, status_of
from harvest_engine.http.inputs import check_query, parse_body, read_body
from harvest_engine.http.routes import ENDPOINTS
from harvest_engine.http.table import Call
from harvest_engine.http.targets import Target, target_of
from harvest_engine.http.views import json_response

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
    from pathlib import Path

    from starlette.requests import Request
    from starlette.routing import BaseRoute
    from starlette.types import ASGIApp, Receive, Scope, Send

    from harvest_engine.codecs import PayloadCodec
    from harvest_engine.http.table import Endpoint
    from harvest_engine.runtime.runtime import Runtime


def error_response(exc: BaseException) -> Response:
    """The JSON error body of a refusal, with its status (and its headers: Allow, WWW-Authenticate)."""
    headers = exc.headers if isinstance(exc, HttpRefusal) else None
    return json_response(error_body(exc), status_of(exc), headers)


def _gate(
    endpoint: Endpoint, target: Target, read_only: bool
) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint of one route: checks, then its handler, then its JSON."""

    async def answer(request: Request) -> Response:
        try:
            if endpoint.write and read_only:
                raise HttpRefusal(
                    403,
                    "ReadOnly",
                    f"{endpoint.method} {endpoint.full_path} changes the store; this "
                    "API is read-only",
                )
            query = check_query(endpoint, request)
            body: dict[str, Any] = {}
            if endpoint.method != "GET":
                check_origin(request)
                body = parse_body(endpoint, request, await read_body(request))
            call = Call(target, dict(request.path_params), query, body, request)
            result = await endpoint.handler(call)
        except Exception as exc:  # noqa: BLE001 - every failure answers as a JSON error
            return error_response(exc)
        if isinstance(result, Response):
            return result
        return json_response(result, endpoint.status)

    answer.__name__ = endpoint.handler.__name__
    return answer


def check_origin(request: Request) -> None:
    """Refuse (403) a call a web page of another site makes: a cross-site request forgery.

    A browser names the page's site in ``Origin`` on every cross-site POST,
    PUT or DELETE, and a page may send one without a preflight (a form, or
    ``fetch`` with ``mode: "no-cors"``): on an API without a token on
    127.0.0.1, that would let any site a user visits trigger a schedule. A
    caller that is no browser (curl, a program) sends no ``Origin``; a page
    served by this same host and port passes.
    """
    origin = request.headers.get("origin")
    if origin is None:
        return
    host = request.headers.get("host", "")
    if origin.partition("://")[2].rstrip("/").lower() != host.lower():
        raise HttpRefusal(
            403,
            "CrossOrigin",
            f"a call from the web page of {origin} is refused: this API takes "
            "commands from its own site or from programs, not from other sites",
            origin=origin,
        )


class BearerToken:
    """ASGI middleware: a request without ``Authorization: Bearer <token>`` gets 401, on any path."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass an authorized request (and lifespan events) on; answer any other 401."""
        if scope["type"] == "http":
            scheme, _, given = (
                Headers(scope=scope).get("authorization", "").partition(" ")
            )
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                given.strip().encode(), self.token
            ):
                refusal = HttpRefusal(
                    401,
                    "Unauthorized",
                    "this API needs the header 'Authorization: Bearer <token>'",
                    headers={"WWW-Authenticate": 'Bearer realm="harvest"'},
                )
                await error_response(refusal)(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (unknown route, wrong method) as the API's JSON errors."""
    assert isinstance(exc, HTTPException)
    kinds = {404: "NotFound", 405: "MethodNotAllowed"}
    refusal = HttpRefusal(
        exc.status_code,
        kinds.get(exc.status_code, "HttpError"),
        f"{request.method} {request.url.path}: {exc.detail}",
        headers=dict(exc.headers or {}),
    )
    return error_response(refusal)


def _checked_token(token: object) -> str | None:
    if token is None:
        return None
    if not isinstance(token, str) or not token.strip() or token != token.strip():
        raise ValueError("token must be non-blank text without surrounding white space")
    return token


def create_app(
    target: Runtime | str | Path,
    *,
    token: str | None = None,
    read_only: bool = False,
    extra_routes: Sequence[BaseRoute] = (),
    codec: PayloadCodec | None = None,
) -> Starlette:
    """The management HTTP API of a harvest store, as an ASGI app (Starlette).

    Serve it with any ASGI server (`harvest http` uses uvicorn) or mount it
    in your own app. Routes are under ``/api/v1``; the OpenAPI document is
    ``/api/v1/openapi.json``.

    Args:
        target: a `Runtime` of this process (every route, the workflow code
            at hand), or the path of a served file or a Postgres URL (commands
            go through a `HarvestClient` to the process that serves it, reads
            through a read-only reader; routes that need the serving runtime,
            where-waiting, stack, held starts and circuit breakers, answer 501).
        token: when given, every request needs ``Authorization: Bearer
            <token>`` (else 401).
        read_only: refuse every route that changes the store (403).
        extra_routes: Starlette routes served beside the API, behind the same
            token (e.g. a ``/metrics`` route of a metrics exporter).
        codec: the payload codec the store at a path or URL was written with
            (its client and reader open with it); a `Runtime` already has its own.

    Returns:
        The app; `app.state.harvest_target` is what it acts on. An app given
        a path closes its client and reader when the server shuts down.

    Raises:
        NotAHarvestDatabase, SchemaTooNew: the path or URL is no served store.
        CodecRequired: its payloads are encoded and `codec` is missing or wrong.
        ValueError: a blank token, or a codec given with a `Runtime`.
    """
    secret = _checked_token(token)
    acting = target_of(target, codec)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        del app
        try:
            yield
        finally:
            acting.close()

    routes: list[BaseRoute] = [
        Route(e.full_path, _gate(e, acting, read_only), methods=[e.method])
        for e in ENDPOINTS
    ]
    routes.extend(extra_routes)
    middleware = [] if secret is None else [Middleware(BearerToken, token=secret)]
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: _http_error},
        lifespan=lifespan,
    )
    app.state.harvest_target = acting
    app.state.harvest_openapi = openapi.document(ENDPOINTS, secured=secret is not None)
    return app
