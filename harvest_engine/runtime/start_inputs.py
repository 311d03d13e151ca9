"""Checks of a start's input, memo and search attributes, before anything persists.

The runtime's starts and the client (before it queues a start) run the same
checks, so an oversized or malformed start is refused where it is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harvest_engine import payloads
from harvest_engine.errors import InvalidSearchAttribute
from harvest_engine.filters import NUL, NUL_REASON
from harvest_engine.names import check_name


def checked_input(value: Any) -> str:
    """The start input as stored JSON; PayloadTooLarge / PayloadTooDeep before any write."""
    return payloads.check(value, "start input")


def checked_memo(value: Any) -> str | None:
    """The memo as stored JSON (None when there is none), under the payload caps."""
    if value is None:
        return None
    return payloads.check(value, "memo")


def checked_search_attributes(value: Mapping[str, Any] | None) -> str | None:
    """The first search attributes as a stored JSON object (None when empty).

    A start does not apply the `upsert_search_attrs` key rules and
    search attributes have no size cap of their own; they must be a JSON
    object with text keys, within the nesting cap.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidSearchAttribute(
            key="(all)",
            reason=f"search attributes are a mapping, got {type(value).__name__}",
        )
    for key, item in value.items():
        if not isinstance(key, str):
            raise InvalidSearchAttribute(key=repr(key), reason="keys are text")
        check_name(key, "search attribute key")
        if isinstance(item, str) and NUL in item:
            raise InvalidSearchAttribute(key=key, reason=NUL_REASON)
    if not value:
        return None
    return payloads.dumps(payloads.to_json(dict(value), "search attributes"))
