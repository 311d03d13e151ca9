"""Form input as JSON: parse and check typed text, and map a dataclass to one field per attribute."""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from dataclasses import dataclass
from typing import Any

# Field kinds a form can edit as plain text; anything else is edited as JSON.
KIND_TEXT = "text"
KIND_INT = "int"
KIND_FLOAT = "float"
KIND_BOOL = "bool"
KIND_JSON = "json"


@dataclass(frozen=True)
class Parsed:
    """A JSON text read: the value, or the error in words (then `value` is None)."""

    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the text parsed (and fitted its type, when one was checked)."""
        return self.error is None


def parse_json(text: str, *, empty: Any = None) -> Parsed:
    """Read `text` as JSON; blank text is `empty`.

    The error names the line and column, e.g. ``line 2, column 5: Expecting ','``.
    """
    if not text.strip():
        return Parsed(empty)
    try:
        return Parsed(json.loads(text))
    except json.JSONDecodeError as exc:
        return Parsed(
            None, f"not JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}"
        )


def parse_typed(text: str, hint: Any, *, empty: Any = None) -> Parsed:
    """Read `text` as JSON and check it against the annotation `hint` (None: any JSON)."""
    parsed = parse_json(text, empty=empty)
    if not parsed.ok:
        return parsed
    problem = type_problem(parsed.value, hint)
    return parsed if problem is None else Parsed(None, problem)


def type_label(hint: Any) -> str:
    """A short name for an annotation: ``int``, ``str | None``, ``list[str]``, ``Order``."""
    if hint is None or hint is Any:
        return "any JSON"
    if hint is type(None):
        return "null"
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__name__
    return str(hint).replace("typing.", "")


def friendly_label(hint: Any) -> str:
    """What an annotation asks for, in a user's words: ``a JSON object``, ``a whole number``."""
    if hint is None or hint is Any:
        return "JSON"
    optional, inner = _is_optional(hint)
    if optional:
        return f"{friendly_label(inner)} or null"
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return f"{hint.__name__} (a JSON object with its fields)"
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "one of " + ", ".join(json.dumps(m.value) for m in hint)
    words = {
        bool: "true or false",
        int: "whole number",
        float: "number",
        str: "text (in double quotes)",
    }
    if hint in words:
        return words[hint]
    if hint in (list, tuple) or origin in (list, tuple, typing.Sequence):
        return "JSON list"
    if hint is dict or origin in (dict, typing.Mapping):
        return "JSON object"
    return type_label(hint)


def _is_optional(hint: Any) -> tuple[bool, Any]:
    """(whether `hint` admits None, the hint without None)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) < len(typing.get_args(hint)):
            return True, args[0] if len(args) == 1 else typing.Union[tuple(args)]  # noqa: UP007
    return False, hint


def type_problem(value: Any, hint: Any, path: str = "input") -> str | None:
    """Why `value` (decoded JSON) does not fit `hint`, or None when it fits.

    Checks what a form can know for sure: dataclass fields (missing and
    unknown ones, each field's type), scalars, lists, dicts, enums and
    optional values. Other annotations accept any JSON.
    """
    if hint is None or hint is Any:
        return None
    optional, inner = _is_optional(hint)
    if value is None:
        return None if optional or inner is type(None) else f"{path} must not be null"
    hint = inner
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        problems = [type_problem(value, arg, path) for arg in typing.get_args(hint)]
        return None if any(p is None for p in problems) else problems[0]
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_problem(value, hint, path)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        known = [m.value for m in hint]
        return (
            None
            if value in known
            else f"{path} must be one of {known!r}, got {value!r}"
        )
    if hint is bool:
        return (
            None
            if isinstance(value, bool)
            else f"{path} must be true or false, got {value!r}"
        )
    if hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else f"{path} must be a whole number, got {value!r}"
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else f"{path} must be a number, got {value!r}"
    if hint is str:
        return None if isinstance(value, str) else f"{path} must be text, got {value!r}"
    if hint in (list, tuple) or origin in (list, tuple, typing.Sequence):
        if not isinstance(value, list):
            return f"{path} must be a list, got {value!r}"
        args = typing.get_args(hint)
        if args and origin is list:
            for i, item in enumerate(value):
                problem = type_problem(item, args[0], f"{path}[{i}]")
                if problem:
                    return problem
        return None
    if hint is dict or origin in (dict, typing.Mapping):
        if not isinstance(value, dict):
            return f"{path} must be a JSON object, got {value!r}"
        args = typing.get_args(hint)
        if len(args) == 2:
            for key, item in value.items():
                problem = type_problem(item, args[1], f"{path}.{key}")
                if problem:
                    return problem
        return None
    return None


def _dataclass_problem(value: Any, cls: type, path: str) -> str | None:
    if not isinstance(value, dict):
        return f"{path} must be a JSON object with the fields of {cls.__name__}, got {value!r}"
    specs = form_fields(cls)
    names = {s.name for s in specs}
    unknown = sorted(set(value) - names)
    if unknown:
        return f"{path}: {cls.__name__} has no field {unknown[0]!r}"
    for spec in specs:
        if spec.name not in value:
            if spec.required:
                return f"{path}: {cls.__name__}.{spec.name} is required"
            continue
        problem = type_problem(value[spec.name], spec.hint, f"{path}.{spec.name}")
        if problem:
            return problem
    return None


@dataclass(frozen=True)
class FieldSpec:
    """One attribute of a dataclass input, as a form field.

    Attributes:
        name: the attribute name.
        hint: its resolved annotation.
        kind: how the form edits it (``text``, ``int``, ``float``, ``bool``, ``json``).
        required: whether the dataclass has no default for it.
        default: the default as decoded JSON (None when required or not JSON).
        optional: whether the annotation admits None (a blank field is null).

    """

    name: str
    hint: Any
    kind: str
    required: bool
    default: Any = None
    optional: bool = False

    @property
    def label(self) -> str:
        """``name (type)`` for the form's label."""
        return f"{self.name} ({type_label(self.hint)})"


def is_form_dataclass(hint: Any) -> bool:
    """Whether `hint` is a dataclass a form can show field by field."""
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def form_fields(cls: type) -> list[FieldSpec]:
    """One `FieldSpec` per dataclass field, in declaration order."""
    try:
        hints = typing.get_type_hints(cls)
    except (NameError, TypeError):
        hints = {}
    specs = []
    for f in dataclasses.fields(cls):
        hint = hints.get(f.name, Any)
        optional, inner = _is_optional(hint)
        if inner is bool:
            kind = KIND_BOOL
        elif inner is int:
            kind = KIND_INT
        elif inner is float:
            kind = KIND_FLOAT
        elif inner is str:
            kind = KIND_TEXT
        else:
            kind = KIND_JSON
        default: Any = None
        required = False
        if f.default is not dataclasses.MISSING:
            default = _jsonable(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = _jsonable(f.default_factory())
        else:
            required = True
        specs.append(FieldSpec(f.name, hint, kind, required, default, optional))
    return specs


def _jsonable(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return None
    return value


def field_text(spec: FieldSpec, value: Any) -> str:
    """The text a field shows for `value` (plain for scalars, JSON otherwise)."""
    if value is None:
        return ""
    if spec.kind == KIND_TEXT and isinstance(value, str):
        return value
    if spec.kind in (KIND_INT, KIND_FLOAT) and isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def field_value(spec: FieldSpec, text: str) -> Parsed:
    """Read one field's text as the JSON value it stands for (errors name the field)."""
    stripped = text.strip()
    if not stripped:
        if spec.optional:
            return Parsed(None)
        if not spec.required:
            return Parsed(spec.default)
        if spec.kind == KIND_TEXT:
            return Parsed("")
        return Parsed(None, f"{spec.name} is required")
    if spec.kind == KIND_TEXT:
        return Parsed(text)
    if spec.kind == KIND_INT:
        try:
            return Parsed(int(stripped))
        except ValueError:
            return Parsed(None, f"{spec.name} must be a whole number, got {stripped!r}")
    if spec.kind == KIND_FLOAT:
        try:
            return Parsed(float(stripped))
        except ValueError:
            return Parsed(None, f"{spec.name} must be a number, got {stripped!r}")
    parsed = parse_json(stripped)
    if not parsed.ok:
        return Parsed(None, f"{spec.name}: {parsed.error}")
    problem = type_problem(parsed.value, spec.hint, spec.name)
    return parsed if problem is None else Parsed(None, problem)


def fields_to_json(specs: list[FieldSpec], texts: dict[str, str]) -> Parsed:
    """The JSON object the field texts stand for, or the first field's error."""
    out: dict[str, Any] = {}
    for spec in specs:
        if spec.kind == KIND_BOOL:
            out[spec.name] = texts.get(spec.name, "") == "true"
            continue
        parsed = field_value(spec, texts.get(spec.name, ""))
        if not parsed.ok:
            return parsed
        out[spec.name] = parsed.value
    return Parsed(out)


def json_to_fields(specs: list[FieldSpec], value: Any) -> dict[str, str]:
    """Field texts for a JSON object (missing keys show their default)."""
    data = value if isinstance(value, dict) else {}
    texts = {}
    for spec in specs:
        item = data.get(spec.name, spec.default)
        if spec.kind == KIND_BOOL:
            texts[spec.name] = "true" if item is True else "false"
        else:
            texts[spec.name] = field_text(spec, item)
    return texts


def skeleton(hint: Any) -> str:
    """Starting JSON text for an input of type `hint` (a dataclass gets its fields)."""
    if is_form_dataclass(hint):
        specs = form_fields(hint)
        sample = {s.name: s.default if not s.required else _sample(s) for s in specs}
        return json.dumps(sample, indent=2, ensure_ascii=False)
    return ""


def _sample(spec: FieldSpec) -> Any:
    return {KIND_TEXT: "", KIND_INT: 0, KIND_FLOAT: 0.0, KIND_BOOL: False}.get(
        spec.kind
    )
