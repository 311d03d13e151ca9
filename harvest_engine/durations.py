"""One parser for durations: a timedelta, a number of seconds, or text like "250ms"."""

from __future__ import annotations

import math
import re
from datetime import timedelta

Duration = timedelta | int | float | str
"""What every duration argument accepts."""

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)")


def to_timedelta(value: Duration, *, what: str = "duration") -> timedelta:
    """Normalize a duration; raise ValueError naming `what` on bad input.

    Text is one or more number+unit parts (``"1h30m"``, ``"250ms"``, ``"2.5s"``);
    a bare number is seconds. Negative durations are refused.
    """
    if isinstance(value, bool):
        raise ValueError(f"{what}: expected a duration, got {value!r}")
    try:
        if isinstance(value, timedelta):
            result = value
        elif isinstance(value, (int, float)):
            if math.isnan(value):
                raise ValueError(f"{what}: expected a duration, got {value!r}")
            result = timedelta(seconds=float(value))
        elif isinstance(value, str):
            result = _parse_text(value, what)
        else:
            raise ValueError(f"{what}: expected a duration, got {value!r}")
    except OverflowError:
        # "inf", "1e400s" or more days than timedelta holds: bad input, not a crash.
        raise ValueError(f"{what}: {value!r} is too long for a duration") from None
    if result < timedelta(0):
        raise ValueError(f"{what}: must not be negative, got {value!r}")
    return result


def to_seconds(value: Duration, *, what: str = "duration") -> float:
    """Normalize a duration to float seconds."""
    return to_timedelta(value, what=what).total_seconds()


def format_duration(delta: timedelta) -> str:
    """Render a duration compactly (``1h30m``, ``250ms``), for tables and forms."""
    total_ms = round(delta.total_seconds() * 1000)
    if total_ms == 0:
        return "0s"
    if total_ms < 1000:
        return f"{total_ms}ms"
    seconds, ms = divmod(total_ms, 1000)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        amount, seconds = divmod(seconds, size)
        if amount:
            parts.append(f"{amount}{unit}")
    if seconds or ms:
        parts.append(f"{seconds}.{ms:03d}s".replace(".000s", "s"))
    return "".join(parts)


def _parse_text(text: str, what: str) -> timedelta:
    stripped = text.strip().lower()
    try:
        return timedelta(seconds=float(stripped))
    except ValueError:
        pass
    pos = 0
    total = 0.0
    for match in _PART.finditer(stripped):
        if match.start() != pos and stripped[pos : match.start()].strip():
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos == 0 or stripped[pos:].strip():
        raise ValueError(
            f"{what}: cannot read {text!r}; use e.g. '250ms', '30s', '5m', '1h', '1d'"
        )
    return timedelta(seconds=total)
