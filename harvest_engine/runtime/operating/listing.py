"""Listing runs through the store: filter checks, pages, and visits under one snapshot."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors import InvalidFilter
from harvest_engine.filters import ExecutionFilter

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.store.records import ExecutionDetail, ExecutionPage


def checked_filter(flt: ExecutionFilter | None) -> ExecutionFilter:
    """`flt`, or the default filter for None.

    Raises:
        InvalidFilter: `flt` is not an ExecutionFilter.
    """
    if flt is None:
        return ExecutionFilter()
    if not isinstance(flt, ExecutionFilter):
        raise InvalidFilter(
            reason=f"expected an ExecutionFilter, got {type(flt).__name__}"
        )
    return flt


def list_executions(store: DurableStore, flt: ExecutionFilter | None) -> ExecutionPage:
    """One page of runs, newest first, without payloads."""
    return store.list_executions(checked_filter(flt))


def visit_executions(
    store: DurableStore,
    flt: ExecutionFilter | None,
    fn: Callable[[ExecutionDetail], object],
) -> int | None:
    """Call `fn` on each run of the page `flt` selects, with payloads, in one snapshot.

    Returns:
        The cursor of the next page, or None at the end.
    """
    chosen = checked_filter(flt)
    rows = store.visit_executions(chosen)
    last: int | None = None
    count = 0
    try:
        for detail in rows:
            fn(detail)
            last = detail.cursor
            count += 1
    finally:
        # End the snapshot now, also when `fn` raises (a generator store).
        close = getattr(rows, "close", None)
        if close is not None:
            close()
    if last is None or count < chosen.page_size:
        return None
    probe = store.list_executions(chosen.before(last).limit(1))
    return last if probe.executions else None
