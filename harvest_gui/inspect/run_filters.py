"""For the run filters (no Qt): key=value parsing, runs per state a filter matches, name hints."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from harvest_engine import ExecutionFilter, HarvestError

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine import ExecutionPage

COUNT_CAP = 5_000
"""Runs counted at most for a filtered count; more reads as "5,000+" (a UI-thread budget)."""

PAGE = 1_000
"""Rows per page while counting (the engine's largest page)."""


@dataclass(frozen=True)
class MatchCounts:
    """How many listed runs a filter matches, per state; `capped` when counting stopped early."""

    by_state: dict[str, int] = field(default_factory=dict)
    capped: bool = False

    @property
    def total(self) -> int:
        """Runs counted in every state."""
        return sum(self.by_state.values())


def count_matching(
    list_page: Callable[[ExecutionFilter], ExecutionPage],
    flt: ExecutionFilter,
    cap: int = COUNT_CAP,
) -> MatchCounts:
    """Count the runs `flt` matches per state, ignoring its own state filter.

    The state boxes show what each state would add, so the count of a state is
    taken as if no state were chosen (the engine keeps no filtered counts:
    pages are read until the end or `cap` runs).
    """
    unstated = replace(flt, states=()).limit(PAGE)
    counts: dict[str, int] = {}
    seen = 0
    page_filter = unstated
    while True:
        page = list_page(page_filter)
        for run in page.executions:
            counts[run.state] = counts.get(run.state, 0) + 1
        seen += len(page.executions)
        if page.next is None:
            return MatchCounts(counts, capped=False)
        if seen >= cap:
            return MatchCounts(counts, capped=True)
        page_filter = unstated.before(page.next)


def unknown_name_hint(typed: str, names: list[str]) -> str | None:
    """What to say when the typed workflow name is none of `names` (None: it is one).

    The filter matches names exactly; names holding the typed text are
    suggested, else the names there are.
    """
    name = typed.strip()
    if not name or name in names:
        return None
    close = [n for n in names if name.lower() in n.lower()]
    if close:
        hint = "did you mean " + ", ".join(close[:3]) + "?"
    elif names:
        hint = "the names are " + ", ".join(names[:8]) + ("…" if len(names) > 8 else "")
    else:
        hint = "no run is listed yet"
    return f"No workflow is named {name!r}: {hint}"


def parse_search(text: str) -> tuple[str, Any] | None:
    """``key=value`` → (key, JSON value or the text); empty → None.

    Raises:
        ValueError: there is text but no ``=`` or no key.

    """
    text = text.strip()
    if not text:
        return None
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ValueError("write the search attribute filter as key=value")
    raw = raw.strip()
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    if isinstance(value, (dict, list)):
        value = raw
    return key.strip(), value


PAUSED_CAP = 1000
"""Paused runs counted at most beside the PAUSED box ("1,000+" past it)."""


def paused_count(list_executions: Any, flt: ExecutionFilter | None) -> str:
    """Paused runs among those `flt` matches (all when None), "1,000+" past the cap.

    An indexed read: the engine keeps a partial index of paused runs.
    """
    try:
        chosen = ExecutionFilter() if flt is None else flt
        page = list_executions(chosen.paused(True).limit(PAUSED_CAP))
    except (ValueError, HarvestError):  # the bar reports a bad filter itself
        return "?"
    n = len(page.executions)
    return f"{n:,}+" if page.next is not None else f"{n:,}"
