"""Input schemas from annotations: does a JSON value fit a handler's declared parameter type?

An update's input is checked against the annotation of its handler's
parameter before the validator runs (`UpdateInputInvalid`). Known
shapes are checked: dataclasses (required fields present, no unknown ones),
`bool`, `int`, `float`, `str`, `None`, `list[X]`, `dict[str, X]`, optionals
and unions, `Literal[...]`. Any other annotation accepts every value.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal, Union

_MISSING = (dataclasses.MISSING,)


def schema_problem(value: Any, hint: Any, where: str = "the input") -> str | None:
    """Why `value` does not fit `hint`, or None when it fits (or the hint is unknown)."""
    if hint is None or hint is Any:
        return None
    if hint is type(None):
        return None if value is None else f"{where} must be null, got {_kind(value)}"
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        problems = [schema_problem(value, arg, where) for arg in typing.get_args(hint)]
        if any(problem is None for problem in problems):
            return None
        return problems[0]
    if origin is Literal:
        allowed = typing.get_args(hint)
        if value in allowed:
            return None
        return f"{where} must be one of {list(allowed)!r}, got {value!r}"
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_problem(value, hint, where)
    if origin in (list, typing.List) or hint is list:  # noqa: UP006
        if not isinstance(value, list):
            return f"{where} must be a list, got {_kind(value)}"
        args = typing.get_args(hint)
        for index, item in enumerate(value):
            problem = schema_problem(
                item, args[0] if args else None, f"{where}[{index}]"
            )
            if problem is not None:
                return problem
        return None
    if origin in (dict, typing.Dict) or hint is dict:  # noqa: UP006
        if not isinstance(value, dict):
            return f"{where} must be an object, got {_kind(value)}"
        args = typing.get_args(hint)
        for key, item in value.items():
            problem = schema_problem(
                item, args[1] if len(args) == 2 else None, f"{where}.{key}"
            )
            if problem is not None:
                return problem
        return None
    return _scalar_problem(value, hint, where)


def _scalar_problem(value: Any, hint: Any, where: str) -> str | None:
    if hint is bool:
        return (
            None
            if isinstance(value, bool)
            else f"{where} must be a boolean, got {_kind(value)}"
        )
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return None
        return f"{where} must be an integer, got {_kind(value)}"
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return None
        return f"{where} must be a number, got {_kind(value)}"
    if hint is str:
        return (
            None
            if isinstance(value, str)
            else f"{where} must be text, got {_kind(value)}"
        )
    return None


def _dataclass_problem(value: Any, hint: type[Any], where: str) -> str | None:
    if not isinstance(value, dict):
        return f"{where} must be an object ({hint.__name__}), got {_kind(value)}"
    try:
        hints = typing.get_type_hints(hint)
    except (NameError, TypeError):
        hints = {}
    fields = {f.name: f for f in dataclasses.fields(hint) if f.init}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        return f"{where} has unknown field(s) {unknown} for {hint.__name__}"
    for name, spec in fields.items():
        if name not in value:
            if spec.default in _MISSING and spec.default_factory in _MISSING:
                return f"{where} lacks the required field {name!r} of {hint.__name__}"
            continue
        problem = schema_problem(value[name], hints.get(name), f"{where}.{name}")
        if problem is not None:
            return problem
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
