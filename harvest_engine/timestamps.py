"""Aware datetimes to and from the integer microseconds and text stored in the file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micros(when: datetime) -> int:
    """An aware datetime as integer microseconds since the Unix epoch."""
    if when.tzinfo is None:
        raise ValueError(f"expected an aware datetime, got {when!r}")
    delta = when - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def opt_micros(when: datetime | None) -> int | None:
    """`micros` of an optional datetime (None stays None)."""
    return None if when is None else micros(when)


def from_micros(value: int) -> datetime:
    """Integer microseconds since the epoch as an aware UTC datetime."""
    # Positional: timedelta's keyword parsing costs more than the addition.
    return _EPOCH + timedelta(0, 0, value)


def to_text(when: datetime) -> str:
    """A stable ISO-8601 UTC rendering with microseconds (``...T12:00:00.000000Z``)."""
    return from_micros(micros(when)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_text(text: str) -> datetime:
    """Parse what `to_text` writes (or any ISO-8601 text with an offset)."""
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when
