"""Filtering a history by event type and by name (text or regex), and cutting it into pages."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harvest_engine import HistoryEvent

PAGE_SIZE = 1000
"""Events per page of a huge history (the table never holds more)."""

_NAME_KEYS = ("name", "workflow_name", "timer_id", "key", "activity_id", "update_id")


def event_name(event: HistoryEvent) -> str:
    """The name an event is about: activity, signal, update, child workflow, timer or mutex key."""
    for key in _NAME_KEYS:
        value = event.attrs.get(key)
        if value not in (None, ""):
            return str(value)
    return ""


@dataclass(frozen=True)
class HistoryQuery:
    """What to keep.

    Attributes:
        types: event types to keep (empty: all).
        name: text the event's name must contain (case-insensitive), or a
            regular expression when `regex` is set (empty: any name).
        regex: read `name` as a regular expression.

    """

    types: frozenset[str] = frozenset()
    name: str = ""
    regex: bool = False

    def matcher(self) -> re.Pattern[str] | None:
        """The compiled name pattern (None: no name filter).

        Raises:
            re.error: `regex` is set and `name` is not a valid expression.

        """
        if not self.name:
            return None
        if self.regex:
            return re.compile(self.name)
        return re.compile(re.escape(self.name), re.IGNORECASE)


def check_pattern(text: str) -> str | None:
    """Why `text` is not a valid regular expression, or None."""
    try:
        re.compile(text)
    except re.error as exc:
        return f"not a valid regular expression: {exc}"
    return None


def filter_history(
    history: Sequence[HistoryEvent], query: HistoryQuery
) -> list[HistoryEvent]:
    """The events that pass `query`, in order.

    Raises:
        re.error: the query's regular expression is invalid.

    """
    pattern = query.matcher()
    out = []
    for event in history:
        if query.types and event.type not in query.types:
            continue
        if pattern is not None and not pattern.search(event_name(event)):
            continue
        out.append(event)
    return out


def page_count(n: int, size: int = PAGE_SIZE) -> int:
    """How many pages `n` events make (at least one)."""
    return max(1, -(-n // size))


def page(
    events: Sequence[HistoryEvent], index: int, size: int = PAGE_SIZE
) -> list[HistoryEvent]:
    """Page `index` (0-based, clamped) of `events`."""
    index = max(0, min(index, page_count(len(events), size) - 1))
    return list(events[index * size : (index + 1) * size])


def page_of_seq(
    events: Sequence[HistoryEvent], seq: int, size: int = PAGE_SIZE
) -> int | None:
    """The page holding event `seq`, or None when the filter hides it."""
    for i, event in enumerate(events):
        if event.seq == seq:
            return i // size
    return None
