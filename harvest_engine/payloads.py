"""JSON payloads: the codec, the size and depth caps, and dataclass conversion."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any, Union

import orjson

from harvest_engine.errors import PayloadTooDeep, PayloadTooLarge

Json = Any
"""A JSON value: dict, list, str, int, float, bool or None."""

MAX_PAYLOAD_BYTES = 2 * 1024 * 1024
MAX_PAYLOAD_DEPTH = 100

_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def dumps(value: Json) -> str:
    """Encode a JSON value canonically (sorted keys, compact), as text."""
    return dumpb(value).decode()


def dumpb(value: Json) -> bytes:
    """Encode a JSON value canonically (sorted keys, compact), as bytes."""
    try:
        return orjson.dumps(value, option=_OPTS)
    except orjson.JSONEncodeError as exc:
        if "64-bit" in str(exc):
            # The stdlib would write it, but every read (orjson's) would turn
            # it into a float: refuse it rather than change the value.
            raise TypeError(
                "an integer beyond the 64-bit range cannot be kept exactly "
                "(send it as a string)"
            ) from exc
        # Nesting past orjson's limit; anything else gets the stdlib's error.
        return json.dumps(
            to_json(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()


def loads(text: str | bytes) -> Json:
    """Decode JSON text."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def depth_of(value: Json, limit: int = MAX_PAYLOAD_DEPTH) -> int:
    """Nesting depth of a value (a scalar is 0), stopping once past `limit`."""
    best = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: typing.Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        level += 1
        best = max(best, level)
        if best > limit:
            return best
        stack.extend((child, level) for child in children)
    return best


def check(value: Json, what: str, *, limit_bytes: int = MAX_PAYLOAD_BYTES) -> str:
    """Validate a payload against both caps and return its encoding.

    Raises:
        PayloadTooDeep: nesting over `MAX_PAYLOAD_DEPTH` (checked first, since
            a too-deep value may not even encode).
        PayloadTooLarge: encoding over `limit_bytes`.
        TypeError: the value is not JSON (named by `what`).
    """
    value = to_json(value)
    if depth_of(value) > MAX_PAYLOAD_DEPTH:
        raise PayloadTooDeep(what=what, limit=MAX_PAYLOAD_DEPTH)
    try:
        raw = dumpb(value)
    except TypeError as exc:
        raise TypeError(f"{what} is not JSON: {exc}") from exc
    if len(raw) > limit_bytes:
        raise PayloadTooLarge(what=what, size=len(raw), limit=limit_bytes)
    return raw.decode()


def encodable(value: Any) -> bool:
    """Whether `value` (after dataclass conversion) encodes as JSON, the caps aside."""
    try:
        dumpb(to_json(value))
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def to_json(value: Any) -> Json:
    """Turn dataclasses (also nested, in lists and dicts) into JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)
        }
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return value


def from_json(value: Json, hint: Any) -> Any:
    """Convert a JSON value to the annotated type (dataclasses, lists, optionals).

    Values of other types pass through unchanged: payloads are JSON first.
    """
    if hint is None or hint is Any or value is None:
        return value
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, dict):
            return value
        hints = typing.get_type_hints(hint)
        kwargs = {
            f.name: from_json(value[f.name], hints.get(f.name))
            for f in dataclasses.fields(hint)
            if f.name in value
        }
        return hint(**kwargs)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (list, typing.List) and args and isinstance(value, list):  # noqa: UP006
        return [from_json(v, args[0]) for v in value]
    if origin in (dict, typing.Dict) and len(args) == 2 and isinstance(value, dict):  # noqa: UP006
        return {k: from_json(v, args[1]) for k, v in value.items()}
    if origin in (Union, types.UnionType):
        for arg in args:
            if arg is type(None):
                continue
            if dataclasses.is_dataclass(arg) and isinstance(value, dict):
                return from_json(value, arg)
    return value
