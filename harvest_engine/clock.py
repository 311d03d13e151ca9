"""Where the runtime reads the time: the system clock, or a manual one for tests."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Protocol

from harvest_engine.durations import Duration, to_timedelta

monotonic = getattr(time.monotonic, "__wrapped__", time.monotonic)
"""`time.monotonic` itself, not the wrapper workflow/loop.py puts in its place
(it refuses the call inside workflow code): the engine's own reads of it, a
few per run in a pass, cost no second call."""


class Clock(Protocol):
    """A source of aware UTC datetimes; the runtime reads it once per decision."""

    def now(self) -> datetime:
        """The current time, timezone-aware."""
        ...


class SystemClock:
    """The real wall clock (UTC)."""

    def now(self) -> datetime:
        """The current wall-clock time in UTC."""
        return datetime.now(UTC)


class ManualClock:
    """A clock that moves only when told: timers and backoff tests without sleeping."""

    def __init__(self, start: datetime | None = None) -> None:
        """Start at `start` (default 2030-01-01T00:00:00Z)."""
        self._now = start or datetime(2030, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The clock's current reading."""
        with self._lock:
            return self._now

    def advance(self, by: Duration) -> datetime:
        """Move the clock forward and return the new reading."""
        with self._lock:
            self._now += to_timedelta(by)
            return self._now

    def set(self, when: datetime) -> None:
        """Jump to an aware datetime."""
        if when.tzinfo is None:
            raise ValueError("ManualClock.set needs an aware datetime")
        with self._lock:
            self._now = when
