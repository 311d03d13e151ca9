"""ExecutionFilter: the immutable builder that says which runs a listing returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime

from harvest_engine import payloads
from harvest_engine.errors import InvalidFilter, InvalidSearchAttribute
from harvest_engine.names import check_name
from harvest_engine.states import ALL_STATES, ExecutionId

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
MAX_STATES = 64
MAX_SEARCH_ATTRIBUTES = 64

# JSON1 reads a stored integer of 2^63 or more as a float, which cannot tell
# neighbouring values apart, so such a filter value could match wrongly (guide §8).
SEARCH_NUMBER_BOUND = 2**63

SearchValue = str | int | float | bool | None
"""What a search-attribute filter can compare with: a JSON scalar."""


NUL = "\x00"
NUL_REASON = (
    "text with a NUL character cannot be searched (JSON1 reads text only up to it)"
)


def check_search_value(key: str, value: object) -> SearchValue:
    """Return `value` if a search-attribute filter can compare with it.

    Raises:
        InvalidSearchAttribute: the key is not non-empty text, or the value is
            not a JSON string, number, boolean or null, or is a number of
            magnitude 2^63 or more, or is not finite, or is text holding NUL.
    """
    if not isinstance(key, str) or not key:
        raise InvalidSearchAttribute(
            key=str(key), reason="the key must be non-empty text"
        )
    check_name(key, "search attribute key")
    if isinstance(value, str) and NUL in value:
        raise InvalidSearchAttribute(key=key, reason=NUL_REASON)
    if isinstance(value, str):
        text: str = payloads.check_value(value, f"search attribute {key!r}")
        return text
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidSearchAttribute(
                key=key, reason=f"{value!r} is not a JSON number"
            )
        if abs(value) >= SEARCH_NUMBER_BOUND:
            raise InvalidSearchAttribute(
                key=key,
                reason=f"{value!r} has magnitude 2^63 or more; JSON1 cannot compare it exactly",
            )
        return value
    raise InvalidSearchAttribute(
        key=key,
        reason=f"a filter value must be a JSON string, number, boolean or null, got "
        f"{type(value).__name__}",
    )


@dataclass(frozen=True)
class ExecutionFilter:
    """Which runs `list_executions` and `visit_executions` return, newest first.

    Every method returns a new filter, so a page loop can write
    ``flt = flt.before(page.next)``. Set filters combine with AND; repeated
    `state` calls accumulate (any of them matches).

    Example:
        ``ExecutionFilter().workflow_name("order").state("RUNNING").limit(50)``
    """

    workflow_names: tuple[str, ...] = ()
    exec_ids: tuple[str, ...] = ()
    workflow_ids: tuple[str, ...] = ()
    workflow_id_prefixes: tuple[str, ...] = ()
    states: tuple[str, ...] = ()
    started_from: datetime | None = None
    started_until: datetime | None = None
    parent_exec_ids: tuple[str, ...] = ()
    closed_from: datetime | None = None
    closed_until: datetime | None = None
    search_attributes: tuple[tuple[str, SearchValue], ...] = ()
    page_size: int = DEFAULT_LIMIT
    cursor: int | None = field(default=None)
    paused_flag: bool | None = None

    def workflow_name(self, name: str) -> ExecutionFilter:
        """Only runs of this workflow."""
        return replace(self, workflow_names=(_text("workflow_name", name),))

    def exec_id(self, exec_id: str | ExecutionId) -> ExecutionFilter:
        """Only the run with this id."""
        text = str(exec_id).strip() if isinstance(exec_id, (str, ExecutionId)) else None
        if not text:
            raise InvalidFilter(
                reason=f"exec_id must be non-empty text, got {exec_id!r}"
            )
        return replace(self, exec_ids=(text,))

    def workflow_id(self, workflow_id: str) -> ExecutionFilter:
        """Only runs with exactly this workflow id."""
        return replace(
            self, workflow_ids=(_text("workflow_id", workflow_id, blank=True),)
        )

    def workflow_id_prefix(self, prefix: str) -> ExecutionFilter:
        """Only runs whose workflow id starts with `prefix`."""
        return replace(
            self,
            workflow_id_prefixes=(_text("workflow_id_prefix", prefix, blank=True),),
        )

    def state(self, *states: str) -> ExecutionFilter:
        """Also match runs in these states (``"RUNNING"``, ``"COMPLETED"``, ...).

        Raises:
            InvalidFilter: an unknown state, or more than 64 states in all.
        """
        added = list(self.states)
        for state in states:
            if not isinstance(state, str) or state.upper() not in ALL_STATES:
                known = ", ".join(sorted(ALL_STATES))
                raise InvalidFilter(reason=f"unknown state {state!r} (one of {known})")
            if state.upper() not in added:
                added.append(state.upper())
        if len(added) > MAX_STATES:
            raise InvalidFilter(reason=f"a filter holds at most {MAX_STATES} states")
        return replace(self, states=tuple(added))

    def started_after(self, when: datetime) -> ExecutionFilter:
        """Only runs started at or after `when` (inclusive; an aware datetime)."""
        return replace(self, started_from=_aware("started_after", when))

    def started_before(self, when: datetime) -> ExecutionFilter:
        """Only runs started before `when` (exclusive; an aware datetime)."""
        return replace(self, started_until=_aware("started_before", when))

    def parent(self, exec_id: str | ExecutionId) -> ExecutionFilter:
        """Only the children of this run (attached or detached)."""
        text = str(exec_id).strip() if isinstance(exec_id, (str, ExecutionId)) else None
        if not text:
            raise InvalidFilter(
                reason=f"parent takes a run id (non-empty text), got {exec_id!r}"
            )
        return replace(self, parent_exec_ids=(text,))

    def closed_after(self, when: datetime) -> ExecutionFilter:
        """Only runs that ended at or after `when` (inclusive; a RUNNING run never matches)."""
        return replace(self, closed_from=_aware("closed_after", when))

    def closed_before(self, when: datetime) -> ExecutionFilter:
        """Only runs that ended before `when` (exclusive; a RUNNING run never matches)."""
        return replace(self, closed_until=_aware("closed_before", when))

    def search_attribute(self, key: str, value: SearchValue) -> ExecutionFilter:
        """Only runs whose search attribute `key` equals `value` (numbers as numbers).

        A second call with the same key replaces the first.

        Raises:
            InvalidSearchAttribute: `value` is not a comparable JSON scalar.
            InvalidFilter: more than 64 search attributes.
        """
        checked = check_search_value(key, value)
        kept = tuple((k, v) for k, v in self.search_attributes if k != key)
        if len(kept) + 1 > MAX_SEARCH_ATTRIBUTES:
            raise InvalidFilter(
                reason=f"a filter holds at most {MAX_SEARCH_ATTRIBUTES} search attributes"
            )
        return replace(self, search_attributes=(*kept, (key, checked)))

    def paused(self, flag: bool = True) -> ExecutionFilter:
        """Only paused runs (`rt.pause`), or with ``flag=False`` only runs that are not.

        Raises:
            InvalidFilter: `flag` is not a bool.
        """
        if not isinstance(flag, bool):
            raise InvalidFilter(reason=f"paused takes a bool, got {flag!r}")
        return replace(self, paused_flag=flag)

    def limit(self, n: int) -> ExecutionFilter:
        """Rows per page, cut to the range 1..1000 (default 100)."""
        if not isinstance(n, int) or isinstance(n, bool):
            raise InvalidFilter(reason=f"limit must be an int, got {n!r}")
        return replace(self, page_size=min(MAX_LIMIT, max(1, n)))

    def before(self, cursor: int | None) -> ExecutionFilter:
        """Start after this cursor (a page's `next`); None starts at the newest run.

        Raises:
            InvalidFilter: the cursor is not a 64-bit int.
        """
        if cursor is not None and (
            not isinstance(cursor, int) or isinstance(cursor, bool)
        ):
            raise InvalidFilter(
                reason=f"a cursor is a page's `next` (an int), got {cursor!r}"
            )
        # A `next` is a rowid, a signed 64-bit integer: anything wider never
        # came from a page, and SQLite could not even bind it.
        if cursor is not None and not -(2**63) <= cursor < 2**63:
            raise InvalidFilter(
                reason=f"a cursor is a page's `next` (a 64-bit rowid), got {cursor}"
            )
        return replace(self, cursor=cursor)


def _text(what: str, value: object, *, blank: bool = False) -> str:
    if not isinstance(value, str) or (not blank and not value.strip()):
        raise InvalidFilter(
            reason=f"{what} must be non-empty text, got {repr(value)[:80]}"
        )
    check_name(value, what)
    return value


def _aware(what: str, when: object) -> datetime:
    if not isinstance(when, datetime) or when.tzinfo is None:
        raise InvalidFilter(reason=f"{what} takes an aware datetime, got {when!r}")
    return when
