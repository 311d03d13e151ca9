"""The user-code traceback a recorded failure carries (engine frames trimmed, bounded), and its log lines."""

from __future__ import annotations

import logging
import os
import sysconfig
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvest_engine.states import ErrorInfo

log = logging.getLogger("harvest_engine.failures")

MAX_TRACE_FRAMES = 30
"""Frames a recorded traceback keeps (the innermost ones)."""

MAX_TRACE_CHARS = 8192
"""Characters a recorded traceback keeps (its tail: the innermost frames and the error)."""


def _folders(*folders: str) -> tuple[str, ...]:
    return tuple(os.path.normcase(os.path.abspath(f)) + os.sep for f in folders)


_PATHS = sysconfig.get_paths()
# Frames in these folders are harvest's or Python's own (asyncio, threads,
# functools), not the user's code; installed packages (site-packages, which
# may sit inside the standard library's folder) are the user's.
_ENGINE = _folders(os.path.dirname(os.path.abspath(__file__)))
_STDLIB = _folders(_PATHS["stdlib"], _PATHS["platstdlib"])
_INSTALLED = _folders(_PATHS["purelib"], _PATHS["platlib"])


def user_frames(error: BaseException) -> list[traceback.FrameSummary]:
    """The frames of `error`'s traceback in the user's code, innermost last (all of them).

    Chained causes are followed when the error itself has no user frame (an
    error harvest raised at a user's call site carries the call site's frames).
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        frames = [
            entry
            for entry in traceback.extract_tb(current.__traceback__)
            if is_user_code(entry.filename)
        ]
        if frames:
            return frames
        current = current.__cause__ or current.__context__
    return []


def stack_trace(error: BaseException) -> str | None:
    """`error` as a traceback of the user's frames, at most MAX_TRACE_FRAMES and MAX_TRACE_CHARS.

    An error raised from a recorded failure (an activity's or a child's, see
    `carry_trace`) ends with that failure's own traceback, where the user's
    bug is. None when there is nothing to point at. Built only when a
    failure is recorded, never on the success path.
    """
    text = _own_trace(error)
    recorded = _recorded_trace(error)
    if recorded:
        text = (
            f"{text}\nraised from this recorded failure:\n{recorded}"
            if text
            else recorded
        )
    if text is None or len(text) <= MAX_TRACE_CHARS:
        return text
    cut = "... (earlier lines cut)\n"
    return cut + text[-(MAX_TRACE_CHARS - len(cut)) :]


def carry_trace(error: BaseException, recorded: str | None) -> BaseException:
    """Mark `error` (raised in workflow code from a recorded failure) with that failure's trace."""
    if recorded:
        setattr(error, _RECORDED, recorded)
    return error


_RECORDED = "_harvest_recorded_trace"


def _recorded_trace(error: BaseException) -> str | None:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        recorded = getattr(current, _RECORDED, None)
        if isinstance(recorded, str):
            return recorded
        current = current.__cause__ or current.__context__
    return None


def _own_trace(error: BaseException) -> str | None:
    frames = user_frames(error)
    if not frames:
        return None
    trimmed = max(0, len(frames) - MAX_TRACE_FRAMES)
    lines = traceback.format_list(frames[trimmed:])
    tail = "".join(traceback.format_exception_only(type(error), error))
    while len(lines) > 1 and sum(map(len, lines)) + len(tail) > MAX_TRACE_CHARS:
        lines.pop(0)
        trimmed += 1
    head = "Traceback (most recent call last; harvest's frames left out):\n"
    if trimmed:
        head += f"  ... {trimmed} earlier frame(s) left out\n"
    return head + "".join(lines) + tail


def is_user_code(filename: str) -> bool:
    """Whether a frame's file is the user's: not harvest's, not the standard library's."""
    if filename.startswith("<"):
        return False  # <frozen ...>, <string>: nothing a user can open
    path = os.path.normcase(os.path.abspath(filename))
    if path.startswith(_ENGINE):
        return False
    return path.startswith(_INSTALLED) or not path.startswith(_STDLIB)


def log_failed_attempt(
    *,
    exec_id: str,
    workflow_id: str,
    workflow_name: str,
    activity: str,
    attempt: int,
    error: ErrorInfo,
) -> None:
    """One WARNING line for an activity attempt that failed, with its traceback."""
    log.warning(
        "activity %s attempt %d of run %s (workflow %s, id %s) failed: %s: %s%s",
        activity,
        attempt,
        exec_id,
        workflow_name,
        workflow_id,
        error.type,
        error.message,
        _trace_suffix(error),
        extra={
            "exec_id": exec_id,
            "workflow_id": workflow_id,
            "workflow_name": workflow_name,
            "activity": activity,
            "attempt": attempt,
        },
    )


def log_failed_run(
    *, exec_id: str, workflow_id: str, workflow_name: str, error: ErrorInfo
) -> None:
    """One ERROR line for a run that ended FAILED, with its traceback."""
    log.error(
        "run %s (workflow %s, id %s) failed: %s: %s%s",
        exec_id,
        workflow_name,
        workflow_id,
        error.type,
        error.message,
        _trace_suffix(error),
        extra={
            "exec_id": exec_id,
            "workflow_id": workflow_id,
            "workflow_name": workflow_name,
        },
    )


def _trace_suffix(error: ErrorInfo) -> str:
    return f"\n{error.stack_trace.rstrip()}" if error.stack_trace else ""
