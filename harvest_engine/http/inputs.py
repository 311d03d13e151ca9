"""A request's inputs, checked before any call: the body (size, time, JSON object, members) and the query.

Nothing here writes: a body over the limit, one that takes too long to
arrive, one that is not a JSON object of the endpoint's members, or a query
parameter the endpoint does not take is refused with its status before the
handler runs. The values themselves then pass the runtime's own payload
checks (caps, JSON only) in the call they reach.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import PayloadNotJson, PayloadTooDeep, PayloadTooLarge
from harvest_engine.http.errors import HttpRefusal

if TYPE_CHECKING:
    from starlette.requests import Request

    from harvest_engine.http.table import Endpoint

MAX_BODY_BYTES = payloads.MAX_PAYLOAD_BYTES + 64 * 1024
"""The largest body read: one payload at the runtime's cap plus room for its envelope."""

BODY_SECONDS = 30.0
"""How long a body may take to arrive: a client that trickles it is refused (408)."""

_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "object": dict,
    "array": list,
}


async def read_body(
    request: Request, limit: int = MAX_BODY_BYTES, seconds: float | None = None
) -> bytes:
    """The raw body, refused past `limit` bytes (413) or `seconds` (408).

    A declared Content-Length over the limit is refused before a byte is
    read; a body without one is counted as it arrives.
    """
    seconds = BODY_SECONDS if seconds is None else seconds
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(what="request body", size=int(declared), limit=limit)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLarge(what="request body", size=size, limit=limit)
                chunks.append(chunk)
    except TimeoutError:
        raise HttpRefusal(
            408,
            "RequestTimeout",
            f"the request body did not arrive within {seconds:g}s",
        ) from None
    return b"".join(chunks)


def parse_body(endpoint: Endpoint, request: Request, raw: bytes) -> dict[str, Any]:
    """The body as the endpoint's members: a JSON object, nulls dropped, types checked.

    Parsed by the standard library, not orjson: it keeps an integer past 64
    bits exact (orjson reads it as a float), so the runtime's payload check
    refuses it rather than storing a rounded number, and it refuses NaN.

    Raises:
        HttpRefusal: 415 for a body that is not declared as JSON, 422 for
            one that is no object or has a member the endpoint does not take.
        PayloadNotJson: text that does not parse as JSON (422).
        PayloadTooDeep: nesting too deep to parse (422).
    """
    if not raw.strip():
        data: Any = {}
    else:
        kind = request.headers.get("content-type", "application/json")
        media = kind.split(";")[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            raise HttpRefusal(
                415,
                "UnsupportedMediaType",
                f"a body is JSON (Content-Type: application/json), got {media!r}",
            )
        try:
            data = json.loads(raw, parse_constant=_no_constant)
        except RecursionError:
            raise PayloadTooDeep(
                what="request body", limit=payloads.MAX_PAYLOAD_DEPTH
            ) from None
        except ValueError as exc:
            raise PayloadNotJson(
                what="request body", path="$", reason=str(exc)[:200] or "not JSON"
            ) from None
    if not isinstance(data, dict):
        raise HttpRefusal(
            422,
            "InvalidBody",
            f"the body is a JSON object, got {type(data).__name__}",
        )
    return check_members(endpoint, {k: v for k, v in data.items() if v is not None})


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON value")


def check_members(endpoint: Endpoint, data: dict[str, Any]) -> dict[str, Any]:
    """`data` when it holds only the endpoint's members, each of its type, the required ones present."""
    known = {f.name: f for f in endpoint.body}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise HttpRefusal(
            422,
            "InvalidBody",
            f"{endpoint.method} {endpoint.full_path} takes no member "
            f"{', '.join(map(repr, unknown))} (it takes: {', '.join(known) or 'none'})",
            members=unknown,
        )
    for name, member in known.items():
        if name not in data:
            if member.required:
                raise HttpRefusal(
                    422, "InvalidBody", f"the body needs member {name!r}", member=name
                )
            continue
        expected = member.schema.get("type")
        value = data[name]
        if isinstance(expected, str) and not _is_type(value, expected):
            raise HttpRefusal(
                422,
                "InvalidBody",
                f"member {name!r} is a JSON {expected}, got {type(value).__name__}",
                member=name,
            )
    return data


def _is_type(value: Any, expected: str) -> bool:
    if isinstance(value, bool) and expected in ("integer", "number"):
        return False
    return isinstance(value, _JSON_TYPES.get(expected, object))


def check_query(endpoint: Endpoint, request: Request) -> dict[str, list[str]]:
    """The query parameters by name; 422 for one the endpoint does not take or repeats wrongly."""
    known = {p.name: p for p in endpoint.params}
    found: dict[str, list[str]] = {}
    for name, value in request.query_params.multi_items():
        param = known.get(name)
        if param is None:
            raise HttpRefusal(
                422,
                "InvalidQuery",
                f"{endpoint.method} {endpoint.full_path} takes no query parameter "
                f"{name!r} (it takes: {', '.join(known) or 'none'})",
                parameter=name,
            )
        if name in found and not param.repeat:
            raise HttpRefusal(
                422, "InvalidQuery", f"{name!r} is given once", parameter=name
            )
        found.setdefault(name, []).append(value)
    return found
