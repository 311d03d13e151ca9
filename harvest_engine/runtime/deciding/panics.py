"""Panics: the user-code traceback a panic carries, and the backoff before a pass retries the run."""

from __future__ import annotations

import linecache
import os
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from harvest_engine.tracebacks import user_frames

if TYPE_CHECKING:
    import traceback

PANIC_BUDGET = 3
"""Consecutive panicking cycles before the run is sealed FAILED (type `Panic`)."""

MAX_FRAMES = 30
"""Frames kept in a panic's traceback (the innermost ones)."""


def backoff(count: int) -> timedelta:
    """How long after panic `count` (1-based) a pass retries the run: 1 s, 2 s, 4 s, ...

    A serving loop or `run_until_idle` would otherwise spend the whole
    budget in milliseconds, before anyone could read the first report and
    fix the code. `run_until_blocked` on the run retries at once.
    """
    return timedelta(seconds=2 ** max(0, count - 1))


def retry_at(count: int, now: datetime) -> datetime:
    """The not-before time a pass honours after panic `count`."""
    return now + backoff(count)


def user_traceback(error: BaseException) -> list[dict[str, Any]]:
    """The frames of `error`'s traceback in the user's code, innermost last.

    Each is {"file", "line", "function", "source"}: where the workflow code
    raised, without harvest's and asyncio's frames around it. Chained
    causes are followed when the error itself has no user frame (an error
    harvest raised at a user's call site carries the call site's frames).
    """
    return [_frame(entry) for entry in user_frames(error)[-MAX_FRAMES:]]


def details(error: BaseException) -> dict[str, Any]:
    """A panic's `details`: the error's type and message, and the user-code traceback."""
    return {
        "error_type": type(error).__name__,
        "message": str(error),
        "traceback": user_traceback(error),
    }


def where(details: dict[str, Any]) -> str:
    """Where the innermost user frame is (" at FILE:LINE in FUNCTION"), or "" if none."""
    frames = details.get("traceback") or []
    if not frames:
        return ""
    last = frames[-1]
    return f" at {os.path.basename(last['file'])}:{last['line']} in {last['function']}"


def _frame(entry: traceback.FrameSummary) -> dict[str, Any]:
    source = entry.line
    if source is None and entry.lineno is not None:
        source = linecache.getline(entry.filename, entry.lineno).strip() or None
    return {
        "file": entry.filename,
        "line": entry.lineno,
        "function": entry.name,
        "source": source,
    }
