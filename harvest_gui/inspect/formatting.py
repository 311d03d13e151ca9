"""Plain-text formatting of times, durations and stored JSON values for the views."""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine import Stored

TRUNCATE_AT = 64 * 1024
"""Payload text longer than this is shown cut, with a "show all" button."""


def when(at: datetime | None) -> str:
    """A local, second-precision time, or an empty string."""
    if at is None:
        return ""
    return at.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def when_precise(at: datetime | None) -> str:
    """A local time with milliseconds (history rows)."""
    if at is None:
        return ""
    return at.astimezone().strftime("%H:%M:%S.%f")[:-3]


def duration(seconds: float | None) -> str:
    """``850 ms``, ``12.3 s``, ``4 m 05 s``, ``2 h 03 m`` or ``3 d 04 h``."""
    if seconds is None:
        return ""
    s = max(0.0, seconds)
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(int(s), 60)
    if m < 60:
        return f"{m} m {sec:02d} s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h} h {m:02d} m"
    d, h = divmod(h, 24)
    return f"{d} d {h:02d} h"


def json_text(value: Any, indent: int | None = 2) -> str:
    """A JSON value as text (non-JSON values fall back to repr)."""
    try:
        return json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        return repr(value)


def stored_text(stored: Stored, indent: int | None = 2) -> str:
    """A stored field as text: its JSON, ``null``, or why it is unreadable."""
    if stored.is_unreadable:
        return f"(unreadable: {getattr(stored, 'reason', 'damaged value')})"
    if stored.is_null:
        return "null"
    return json_text(stored.value, indent)


def one_line(stored: Stored, limit: int = 120) -> str:
    """A stored field on one line, cut at `limit` characters (table cells)."""
    if stored.is_null:
        return ""
    text = stored_text(stored, indent=None)
    return text if len(text) <= limit else text[: limit - 1] + "…"


LABEL_CHARS = 500
"""The most of one value a label or a table cell holds (a megabyte id would stall painting)."""


def count(n: int, one: str, many: str | None = None) -> str:
    """``1 schedule``, ``2 schedules``, ``3 mutexes`` (with `many` given)."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def capped(text: str, limit: int = LABEL_CHARS) -> str:
    """`text` cut to `limit` characters, saying how long it was when it is cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def middle(text: str, limit: int = 80) -> str:
    """`text` with its middle cut out to `limit` characters (file names in headlines)."""
    if len(text) <= limit:
        return text
    half = (limit - 1) // 2
    return f"{text[:half]}…{text[-half:]}"


def breakable(text: str, every: int = 60) -> str:
    """`text` capped, with a zero-width space inside each run of `every` non-blank chars.

    A word-wrapped label cannot break a long path or id, so it widens its
    window instead; the invisible break points let it wrap.
    """
    out: list[str] = []
    run = 0
    for ch in capped(text, 4000):
        if ch.isspace():
            run = 0
        else:
            run += 1
            if run > every:
                out.append("\u200b")
                run = 1
        out.append(ch)
    return "".join(out)


def attributes_text(stored: Stored, limit: int = 200) -> str:
    """Search attributes as ``customer=acme, total=120.5`` (a cell: keys stay readable).

    The JSON form, cut in its middle, read ``{"cust…er": …}`` in the run list.
    """
    if stored.is_null or stored.is_unreadable or not isinstance(stored.value, dict):
        return one_line(stored, limit)
    parts = [
        f"{key}={value if isinstance(value, str) else json_text(value, None)}"
        for key, value in stored.value.items()
    ]
    text = ", ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


FIT_CHARS = 200
"""Longer label lines are capped and given break points (a megabyte name, issue 17)."""


def fit_line(text: str) -> str:
    """`text` as is, or capped with break points so a label neither stalls nor widens."""
    return text if len(text) <= FIT_CHARS else breakable(capped(text))


def truncate(text: str, limit: int = TRUNCATE_AT) -> tuple[str, bool]:
    """`text` cut to `limit` characters, and whether it was cut."""
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def size_text(n: int) -> str:
    """A character count as ``812 B``, ``14.2 KiB`` or ``3.1 MiB``."""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024 / 1024:.1f} MiB"


def tooltip(text: str) -> str:
    """`text` for a tooltip, escaped so Qt shows it as written.

    Qt guesses a tooltip's format (``Qt::mightBeRichText``), so a workflow id or a
    payload like ``<b>x</b>`` would be drawn bold; escaped inside a paragraph it is
    read as rich text whose content is exactly `text`.
    """
    if not text:
        return ""
    return f"<p style='white-space:pre-wrap'>{html.escape(text, quote=False)}</p>"
