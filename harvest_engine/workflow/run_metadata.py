"""The memo with the search attributes workflow code reads or upserts, kept deterministic.

Both start from what WorkflowStarted recorded and change only through the
code's own upserts, applied when the code makes them: a replay therefore
sees, at every point, exactly what the live run saw there, whatever the
run's row holds by now.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import InvalidSearchAttribute
from harvest_engine.filters import NUL, NUL_REASON
from harvest_engine.names import check_name

if TYPE_CHECKING:
    from collections.abc import Mapping


class RunMetadata:
    """One run's memo and search attributes as of the point its code has reached."""

    def __init__(self) -> None:
        self._memo: dict[str, Any] = {}
        self._attributes: dict[str, Any] = {}

    def start(self, attrs: Mapping[str, Any]) -> None:
        """Take the memo and search attributes WorkflowStarted recorded.

        A memo that is not a JSON object (a start may store any JSON value)
        reads as ``{"value": memo}``, so `memo()` is always a dict.
        """
        memo = attrs.get("memo")
        if isinstance(memo, dict):
            self._memo = dict(memo)
        elif memo is not None:
            self._memo = {"value": memo}
        found = attrs.get("search_attributes")
        if isinstance(found, dict):
            self._attributes = dict(found)

    def memo(self) -> dict[str, Any]:
        """A copy of the memo (the caller may change it freely)."""
        return copy.deepcopy(self._memo)

    def search_attributes(self) -> dict[str, Any]:
        """A copy of the search attributes."""
        return copy.deepcopy(self._attributes)

    def upsert_memo(self, patch: Mapping[str, Any]) -> dict[str, Any]:
        """Merge `patch` (None removes a key) and return it as JSON to record.

        Raises:
            TypeError: `patch` is not a mapping with text keys.
            PayloadTooDeep / PayloadTooLarge: the patch, or the memo it
                makes, is over the payload caps; nothing changes.
        """
        if not hasattr(patch, "items"):
            raise TypeError(f"upsert_memo takes a dict, got {type(patch).__name__}")
        for key in patch:
            if not isinstance(key, str) or not key.strip():
                raise TypeError(f"memo keys are non-empty text, got {key!r}")
        checked = payloads.to_json(dict(patch))
        payloads.check(checked, "memo patch")
        merged = merge_memo(self._memo, checked)
        payloads.check(merged, "memo")
        self._memo = merged
        return dict(checked)

    def upsert_search_attributes(self, attributes: Mapping[str, Any]) -> None:
        """Merge checked search attributes as the run's row merges them (None removes a key)."""
        self._attributes = merge_memo(self._attributes, attributes)


def merge_memo(current: Any, patch: Mapping[str, Any]) -> dict[str, Any]:
    """`current` with `patch` merged in: a None value removes its key."""
    if isinstance(current, dict):
        merged = dict(current)
    elif current is None:
        merged = {}
    else:
        merged = {"value": current}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def check_search_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """`ctx.upsert_search_attrs`'s attributes as JSON to record, each checked.

    Raises:
        InvalidSearchAttribute: a blank key, or a value that is not text, a
            number below 2^63, a boolean or null, or text holding NUL.
    """
    checked: dict[str, Any] = {}
    for key, value in attributes.items():
        if not isinstance(key, str) or not key.strip():
            raise InvalidSearchAttribute(
                key=repr(key)[:80], reason="keys are non-empty text"
            )
        check_name(key, "search attribute key")
        value = payloads.to_json(value, f"search attribute {key!r}")
        if isinstance(value, (dict, list)) or (
            isinstance(value, int)
            and not isinstance(value, bool)
            and abs(value) >= 2**63
        ):
            raise InvalidSearchAttribute(
                key=key,
                reason="values are text, numbers below 2^63, booleans or null",
            )
        if isinstance(value, str) and NUL in value:
            raise InvalidSearchAttribute(key=key, reason=NUL_REASON)
        checked[key] = value
    return checked
