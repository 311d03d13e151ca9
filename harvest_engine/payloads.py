"""JSON payloads: the codec, the size and depth caps, and dataclass (and pydantic) conversion."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import math
import re
import types
import typing
from typing import Any, Union

import orjson

from harvest_engine import models
from harvest_engine.errors import PayloadNotJson, PayloadTooDeep, PayloadTooLarge

if typing.TYPE_CHECKING:
    from collections.abc import Callable

Json = Any
"""A JSON value: dict, list, str, int, float, bool or None."""

MAX_PAYLOAD_BYTES = 2 * 1024 * 1024
MAX_PAYLOAD_DEPTH = 100

_OPTS = orjson.OPT_SORT_KEYS


def dumps(value: Json) -> str:
    """Encode a JSON value canonically (sorted keys, compact), as text."""
    try:  # `dumpb` inlined: every event and row is encoded here
        return orjson.dumps(value, option=_OPTS).decode()
    except orjson.JSONEncodeError:
        return orjson.dumps(to_json(value, "value"), option=_OPTS).decode()


def dumpb(value: Json) -> bytes:
    """Encode a JSON value canonically (sorted keys, compact), as bytes.

    Engine-built values (events, rows) go straight to the encoder; a value
    that is not exactly JSON is refused by `to_json`'s typed error.
    """
    try:
        return orjson.dumps(value, option=_OPTS)
    except orjson.JSONEncodeError:
        return orjson.dumps(to_json(value, "value"), option=_OPTS)


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


def check(value: Any, what: str, *, limit_bytes: int = MAX_PAYLOAD_BYTES) -> str:
    """Validate a payload (see `to_json`) against both caps and return its encoding.

    Raises:
        PayloadTooDeep: nesting over `MAX_PAYLOAD_DEPTH`, found before encoding
            by a walk that never recurses, so any depth gives this error.
        PayloadNotJson: a value JSON cannot hold exactly, named by `what` and
            its path (`$.items[3].price`).
        PayloadTooLarge: encoding over `limit_bytes`.
    """
    return checked(value, what, limit_bytes=limit_bytes)[1]


def checked(
    value: Any, what: str, *, limit_bytes: int = MAX_PAYLOAD_BYTES
) -> tuple[Json, str]:
    """`check`, returning the JSON value (dataclasses converted) with its encoding."""
    kind = type(value)
    if not (
        value is None
        or kind is bool
        or (kind is int and _MIN_INT <= value <= _MAX_INT)
        or (kind is str and value.isascii())
    ):
        # Anything but a plain scalar `to_json` would return as it is.
        value = to_json(value, what)
    raw = orjson.dumps(value, option=_OPTS)
    if len(raw) > limit_bytes:
        raise PayloadTooLarge(what=what, size=len(raw), limit=limit_bytes)
    return value, raw.decode()


def check_value(value: Any, what: str) -> Json:
    """`check`, returning the JSON value: for a payload that is used, not stored."""
    return checked(value, what)[0]


def encodable(value: Any) -> bool:
    """Whether `value` (after dataclass conversion) encodes as JSON, the caps aside."""
    try:
        to_json(value)
    except (PayloadNotJson, PayloadTooDeep):
        return False
    return True


def to_json(value: Any, what: str = "payload") -> Json:
    """The JSON value of a payload: dataclasses and pydantic models become objects, tuples lists.

    Everything else must be a value JSON holds exactly, so that reading it
    back gives the value that was written: text keys only (a non-text key
    would come back as text, or collide with a text key), finite numbers
    (NaN and the infinities would come back as null), integers in the
    64-bit range (JSON readers turn others into floats), and text SQLite can
    store (no lone surrogates). The walk uses its own stack, so a payload
    nested a million levels deep is `PayloadTooDeep`, not a RecursionError.

    Raises:
        PayloadNotJson: naming `what` and the path of the first bad value.
        PayloadTooDeep: nesting over `MAX_PAYLOAD_DEPTH`.
    """
    root: list[Any] = [None]
    # (value, where it goes, its key there, its depth, its path)
    stack: list[tuple[Any, Any, Any, int, _Path]] = [(value, root, 0, 0, None)]
    while stack:
        item, parent, slot, level, path = stack.pop()
        kind = type(item)
        if item is None or kind is bool:
            parent[slot] = item
        elif kind is str:
            if not item.isascii():
                _check_text(item, what, path)
            parent[slot] = item
        elif kind is int:
            if not _MIN_INT <= item <= _MAX_INT:
                raise _not_json(what, path, _BIG_INT)
            parent[slot] = item
        elif kind is float:
            if not math.isfinite(item):
                raise _not_json(what, path, f"{item!r} is not a JSON number")
            parent[slot] = item
        elif isinstance(item, (dict, list, tuple)) or _is_dataclass(item):
            if level >= MAX_PAYLOAD_DEPTH:
                raise PayloadTooDeep(what=what, limit=MAX_PAYLOAD_DEPTH)
            if isinstance(item, dict) or _is_dataclass(item):
                out: Any = {}
                pairs = (
                    item.items()
                    if isinstance(item, dict)
                    else ((f.name, getattr(item, f.name)) for f in _fields(item))
                )
                for key, child in pairs:
                    if type(key) is not str:
                        if not isinstance(key, str):
                            raise _not_json(
                                what,
                                path,
                                f"the key {key!r} ({type(key).__name__}) is not "
                                "text (JSON object keys are text)",
                            )
                        key = str.__str__(key)
                    if not key.isascii():
                        _check_text(key, what, path, key=True)
                    out[key] = None  # the place, so the object keeps its key order
                    stack.append((child, out, key, level + 1, (path, key)))
            else:
                out = [None] * len(item)
                for index, child in enumerate(item):
                    stack.append((child, out, index, level + 1, (path, index)))
            parent[slot] = out
        elif models.is_model(item):
            stack.append((models.dump(item), parent, slot, level, path))
        else:
            parent[slot] = _scalar_subclass(item, what, path)
    return root[0]


# A path to a value inside a payload, as a linked list: (parent, key) or None
# for the root. Built only when an error names it.
_Path = tuple[Any, str | int] | None

_MIN_INT = -(2**63)
_MAX_INT = 2**64 - 1
_BIG_INT = (
    "an integer beyond the 64-bit range cannot be kept exactly (send it as a string)"
)
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _is_dataclass(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _fields(value: Any) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(value)


def _scalar_subclass(item: Any, what: str, path: _Path) -> Json:
    """A subclass of a JSON scalar (IntEnum, StrEnum, ...) as its plain value."""
    if isinstance(item, bool):
        return bool(item)
    if isinstance(item, int):
        if not _MIN_INT <= item <= _MAX_INT:
            raise _not_json(what, path, _BIG_INT)
        return int(item)
    if isinstance(item, float):
        if not math.isfinite(item):
            raise _not_json(what, path, f"{float(item)!r} is not a JSON number")
        return float(item)
    if isinstance(item, str):
        text = str.__str__(item)
        _check_text(text, what, path)
        return text
    raise _not_json(what, path, f"a {type(item).__name__} is not a JSON value")


def _check_text(text: str, what: str, path: _Path, *, key: bool = False) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ord(text[exc.start])
        where = "a key" if key else "text"
        raise _not_json(
            what,
            path,
            f"{where} holds a lone surrogate (U+{bad:04X}), which UTF-8 and "
            "SQLite cannot store",
        ) from None


def render_path(path: _Path) -> str:
    """A payload path as text: `$`, `$.items[3].price`, `$["a b"]`."""
    parts: list[str] = []
    while path is not None:
        path, key = path
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif _KEY.match(key):
            parts.append(f".{key}")
        else:
            parts.append("[" + json.dumps(key) + "]")
    return "$" + "".join(reversed(parts))


def _not_json(what: str, path: _Path, reason: str) -> PayloadNotJson:
    return PayloadNotJson(what=what, path=render_path(path), reason=reason)


def from_json(value: Json, hint: Any, what: str = "payload") -> Any:
    """Convert a JSON value to the annotated type (dataclasses, pydantic models, lists, optionals).

    Values of other types pass through unchanged: payloads are JSON first.

    Raises:
        PayloadInvalid: the hint is a pydantic model the value does not validate as.
    """
    if hint is None or hint is Any or value is None:
        return value
    try:
        plain = _passes_through(hint)
    except TypeError:  # an unhashable hint: no shortcut
        plain = False
    if plain:
        return value
    if models.is_model_class(hint):
        return models.validate(value, hint, what)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, dict):
            return value
        kwargs = {
            name: from_json(value[name], field_hint)
            for name, field_hint in _field_hints(hint)
            if name in value
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
            if (
                dataclasses.is_dataclass(arg) or models.is_model_class(arg)
            ) and isinstance(value, dict):
                return from_json(value, arg, what)
    return value


def decoding(fn: Callable[[Any], Any], what: str) -> Callable[[Any], Any]:
    """`fn`, taking its one argument as JSON and given it as its annotated type.

    A signal handler annotated `(note: Note)` gets a `Note`. `fn` itself when
    the annotation is plain (or missing), so nothing is wrapped for nothing.
    """
    hint = first_param_hint(fn)
    try:
        plain = hint is None or hint is Any or _passes_through(hint)
    except TypeError:  # an unhashable hint: convert anyway
        plain = False
    if plain:
        return fn

    @functools.wraps(fn)
    def decoded(value: Any) -> Any:
        return fn(from_json(value, hint, what))

    return decoded


def first_param_hint(fn: Callable[..., Any]) -> Any:
    """The type hint of `fn`'s first positional parameter, or None (shown for signal handlers too)."""
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        hints = typing.get_type_hints(fn)
    except (TypeError, ValueError, NameError, AttributeError):
        return None
    return hints.get(params[0].name) if params else None


@functools.lru_cache(maxsize=1024)
def _passes_through(hint: Any) -> bool:
    """Whether `from_json` returns every value of `hint` unchanged (int, str, ...); once per hint."""
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return False
    if models.is_model_class(hint):
        return False
    origin = typing.get_origin(hint)
    return origin not in (list, typing.List, dict, typing.Dict, Union, types.UnionType)  # noqa: UP006


@functools.lru_cache(maxsize=1024)
def _field_hints(cls: type) -> tuple[tuple[str, Any], ...]:
    """A dataclass's (field name, type hint) pairs, resolved once per class."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints.get(f.name)) for f in dataclasses.fields(cls))
