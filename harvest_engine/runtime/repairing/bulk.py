"""The bulk forms by filter: cancel, terminate, signal, reset, pause and unpause every matching run.

A bulk call pages through the filter's runs, newest first, `BATCH` at a
time, and acts on each run in its own short transaction, so a crash leaves
every run untouched or fully moved. Each act skips a run it has already
done (cancel requested, closed, reset, paused, unpaused; a bulk signal
carries a key made of its name and payload), so a repeat after a crash
finishes the rest; the count is of the runs this call changed.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import (
    ExecutionNotFound,
    InvalidFilter,
    InvalidResetPoint,
    NotResettable,
    WorkflowNotRunning,
)
from harvest_engine.filters import ExecutionFilter
from harvest_engine.runtime.operating import operate
from harvest_engine.runtime.repairing import pausing, restarts
from harvest_engine.runtime.talking import talk

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.runtime.engine import Engine

BATCH = 100
"""Runs read per page of the filter (each then acted on in its own transaction)."""

BULK_SIGNAL_KEY = "harvest.bulk:"
"""The prefix of a bulk signal's key: one per (name, payload), so a repeat stages nothing twice."""

# What a run that has moved on (closed, gone, never decided) raises: skipped.
_PASSED = (ExecutionNotFound, WorkflowNotRunning, NotResettable, InvalidResetPoint)


def each(engine: Engine, flt: ExecutionFilter, act: Callable[[str], bool]) -> int:
    """Call `act` on every run `flt` matches; how many it changed (returned True)."""
    if not isinstance(flt, ExecutionFilter):
        raise InvalidFilter(reason=f"a bulk call takes an ExecutionFilter, got {flt!r}")
    page_filter = flt.limit(BATCH)
    changed = 0
    while True:
        page = engine.store.list_executions(page_filter)
        for summary in page.executions:
            if summary.damaged is not None:
                continue
            try:
                changed += act(str(summary.exec_id))
            except _PASSED:
                continue
        if page.next is None:
            return changed
        page_filter = page_filter.before(page.next)


def cancel_many(engine: Engine, flt: ExecutionFilter, reason: str) -> int:
    """Request a cancel of every matching RUNNING run without one."""
    restarts.reason_text(
        reason, ""
    )  # a reason that is not text: TypeError, nothing written

    def act(exec_id: str) -> bool:
        row = engine.store.execution(exec_id)
        if row is None or row.state != "RUNNING" or row.cancel_reason is not None:
            return False
        operate.cancel(engine, exec_id, reason)
        return True

    return each(engine, flt, act)


def terminate_many(engine: Engine, flt: ExecutionFilter, reason: str) -> int:
    """Terminate every matching RUNNING run."""
    restarts.reason_text(reason, "")

    def act(exec_id: str) -> bool:
        operate.terminate(engine, exec_id, reason)
        return True

    return each(engine, flt, act)


def signal_many(engine: Engine, flt: ExecutionFilter, name: str, payload: Any) -> int:
    """Signal every matching RUNNING run once (a repeat of the same signal stages nothing)."""
    digest = hashlib.sha256(payloads.dumps([name, payload]).encode()).hexdigest()
    key = BULK_SIGNAL_KEY + digest[:32]

    def act(exec_id: str) -> bool:
        return talk.send_signal_idempotent(engine, exec_id, name, payload, key)

    return each(engine, flt, act)


def reset_many(engine: Engine, flt: ExecutionFilter, reason: str) -> int:
    """Reset every matching run not reset before, each to its default point.

    A run a reset with this same reason made is not reset again, so a repeat
    after a crash does not reset the new runs of the first try.
    """
    why = restarts.reason_text(reason, restarts.DEFAULT_RESET_REASON)

    def act(exec_id: str) -> bool:
        detail = engine.store.describe(exec_id)
        if detail is None or detail.reset_to is not None:
            return False
        if detail.reset_from is not None and restarts.made_by_reset(
            engine, exec_id, why
        ):
            return False
        restarts.reset(engine, exec_id, None, why)
        return True

    return each(engine, flt, act)


def pause_many(engine: Engine, flt: ExecutionFilter, reason: str) -> int:
    """Pause every matching RUNNING run not paused yet."""
    why = restarts.reason_text(reason, pausing.DEFAULT_PAUSE_REASON)

    def act(exec_id: str) -> bool:
        with engine.store.write() as txn:
            return pausing.pause_in(txn, exec_id, why)

    return each(engine, flt, act)


def unpause_many(engine: Engine, flt: ExecutionFilter) -> int:
    """Unpause every matching paused run."""

    def act(exec_id: str) -> bool:
        with engine.store.write() as txn:
            done = pausing.unpause_in(txn, exec_id)
        return engine.woken(done)

    return each(engine, flt, act)
