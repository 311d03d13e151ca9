"""Ids and names (workflow names and ids, signal, query and update names, keys): one cap, one check."""

from __future__ import annotations

from typing import Any

from harvest_engine.errors import InvalidName

MAX_NAME_CHARS = 1000
"""The longest name or id the engine takes, in characters (a page of text)."""


def check_name(value: Any, what: str) -> str:
    """`value` as a name: text of at most `MAX_NAME_CHARS` that SQLite can store.

    Blank text is left to the caller's own rule (some names may be blank,
    some raise a more specific error). Anything that is not text, an integer
    past 2**63 included, is refused here rather than turned into text or
    an `OverflowError` from the driver.

    Raises:
        InvalidName: naming `what` and the reason.
    """
    if not isinstance(value, str):
        raise InvalidName(
            what=what, reason=f"it must be text, got a {type(value).__name__}"
        )
    if len(value) > MAX_NAME_CHARS:
        raise InvalidName(
            what=what,
            reason=f"it is {len(value):,} characters long, over the "
            f"{MAX_NAME_CHARS:,}-character cap",
        )
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidName(
                what=what,
                reason=f"it holds a lone surrogate (U+{ord(value[exc.start]):04X}), "
                "which UTF-8 and SQLite cannot store",
            ) from None
    return value


def check_optional_name(value: Any, what: str) -> str | None:
    """`check_name`, letting None through (an optional id or key)."""
    return None if value is None else check_name(value, what)


def check_key(value: Any, what: str) -> str:
    """An event or stream key: non-blank text within the name rules (InvalidName otherwise)."""
    name = check_name(value, what)
    if not name.strip():
        raise InvalidName(what=what, reason="it is blank")
    return name
