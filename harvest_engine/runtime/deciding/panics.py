"""Panics: the user-code traceback a panic carries, and the backoff before a pass retries the run."""

from __future__ import annotations

import linecache
import os
import sysconfig
import traceback
from datetime import datetime, timedelta
from typing import Any

PANIC_BUDGET = 3
"""Consecutive panicking cycles before the run is sealed FAILED (type `Panic`)."""

MAX_FRAMES = 30
"""Frames kept in a panic's traceback (the innermost ones)."""


def _folders(*folders: str) -> tuple[str, ...]:
    return tuple(os.path.normcase(os.path.abspath(f)) + os.sep for f in folders)


_PATHS = sysconfig.get_paths()
# Frames in these folders are harvest's or Python's own, not the user's code;
# installed packages (site-packages, which may sit inside the standard
# library's folder) are the user's.
# harvest_engine/, this file's package's parent
_ENGINE = _folders(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_STDLIB = _folders(_PATHS["stdlib"], _PATHS["platstdlib"])
_INSTALLED = _folders(_PATHS["purelib"], _PATHS["platlib"])


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
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        frames = [
            _frame(entry)
            for entry in traceback.extract_tb(current.__traceback__)
            if _is_user_code(entry.filename)
        ]
        if frames:
            return frames[-MAX_FRAMES:]
        current = current.__cause__ or current.__context__
    return []


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


def _is_user_code(filename: str) -> bool:
    if filename.startswith("<"):
        return False  # <frozen ...>, <string>: nothing a user can open
    path = os.path.normcase(os.path.abspath(filename))
    if path.startswith(_ENGINE):
        return False
    return path.startswith(_INSTALLED) or not path.startswith(_STDLIB)
