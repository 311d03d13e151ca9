"""Errors for a call's argument refused before anything is written.

Names, ids, payloads, signals, filters and search attributes outside the
documented rules, and options or commands this backend does not support.
"""

from __future__ import annotations

from harvest_engine.errors.base import SqliteError


class BlankWorkflowId(SqliteError):
    """A workflow id that is empty or only white space where one is required."""

    _template = "a workflow id is required here, got {workflow_id!r}"

    def __init__(self, *, workflow_id: str) -> None:
        super().__init__(workflow_id=workflow_id)


class PayloadTooLarge(SqliteError):
    """A payload's JSON encoding is over the size cap."""

    _template = "{what} is {size} bytes, over the {limit}-byte cap"

    def __init__(self, *, what: str, size: int, limit: int) -> None:
        super().__init__(what=what, size=size, limit=limit)


class PayloadTooDeep(SqliteError):
    """A payload nests deeper than `MAX_PAYLOAD_DEPTH`."""

    _template = "{what} nests deeper than {limit} levels"

    def __init__(self, *, what: str, limit: int) -> None:
        super().__init__(what=what, limit=limit)


class InvalidName(SqliteError, TypeError, ValueError):
    """A name or id that is not text, is over the length cap, or cannot be stored.

    Workflow names and ids, signal, query and update names, search-attribute
    keys, idempotency and mutex keys are text of at most 1,000 characters
    with no lone surrogates. A `TypeError` and a `ValueError` too, the errors
    such calls raised before.
    """

    _template = "invalid {what}: {reason}"

    def __init__(self, *, what: str, reason: str) -> None:
        super().__init__(what=what, reason=reason)


class PayloadNotJson(SqliteError, TypeError):
    """A payload holds a value JSON cannot keep exactly; nothing was written.

    NaN or an infinity, a non-text object key, an integer past 64 bits, a
    lone surrogate in text, or a value of another type (a datetime, a set,
    bytes, an object). `path` names where (`$.items[3].price`). A
    `TypeError` too, as these payloads were refused (or silently changed)
    with a plain `TypeError` before.
    """

    _template = "{what} is not JSON: {reason} at {path}"

    def __init__(self, *, what: str, path: str, reason: str) -> None:
        super().__init__(what=what, path=path, reason=reason)


class PayloadInvalid(SqliteError, ValueError):
    """A payload does not validate as the pydantic model its type hint names.

    `field` is the dotted path of the first failing field (`items.3.price`,
    or `(root)`), `reason` pydantic's message for it. Raised before anything
    is written when the value comes in (a start input, an update), and where
    a stored value is decoded into the model (an activity's input, a result).
    """

    _template = "{what} is not a valid {model}: {field}: {reason}"

    def __init__(self, *, what: str, model: str, field: str, reason: str) -> None:
        super().__init__(what=what, model=model, field=field, reason=reason)


class InvalidSignal(SqliteError):
    """A signal call that breaks a signal rule (e.g. a reserved key prefix)."""

    _template = "invalid signal: {reason}"

    def __init__(self, *, reason: str) -> None:
        super().__init__(reason=reason)


class InvalidFilter(SqliteError):
    """An execution filter outside the documented limits."""

    _template = "invalid filter: {reason}"

    def __init__(self, *, reason: str) -> None:
        super().__init__(reason=reason)


class InvalidSearchAttribute(SqliteError):
    """A search attribute key or value that cannot be stored or compared."""

    _template = "invalid search attribute {key!r}: {reason}"

    def __init__(self, *, key: str, reason: str) -> None:
        super().__init__(key=key, reason=reason)


class UnsupportedFeature(SqliteError):
    """A declared option this backend cannot honour, refused at register time."""

    _template = "{owner}: {feature} is not supported by the SQLite backend ({why})"

    def __init__(self, *, owner: str, feature: str, why: str) -> None:
        super().__init__(owner=owner, feature=feature, why=why)


class Unsupported(SqliteError):
    """A command or field reached at run time that this backend rejects."""

    _template = "{feature} — {why}"

    def __init__(self, *, feature: str, why: str) -> None:
        super().__init__(feature=feature, why=why)
