"""The runtime's reads: runs, their histories, ledgers and where they wait; nothing written.

They are `SqliteRuntime` methods, written here so the facade stays a short
table of its surface; the class binds each function as its method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors import ExecutionNotFound
from harvest_engine.runtime import listing, runs, waiting
from harvest_engine.states import ExecutionId, ExecutionOutcome

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.events import HistoryEvent
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.runtime.runtime import SqliteRuntime
    from harvest_engine.store.operations import LedgerTotals
    from harvest_engine.store.records import (
        ActivityAttempt,
        ExecutionDetail,
        ExecutionPage,
        LedgerRow,
    )
    from harvest_engine.workflow.stack import CoroutineStack
    from harvest_engine.workflow.waits import RunWait


def outcome(self: SqliteRuntime, exec_id: str | ExecutionId) -> ExecutionOutcome:
    """The stored outcome, without driving."""
    row = self._store.execution(self._require(exec_id))
    if row is None:
        raise ExecutionNotFound(exec_id=exec_id)
    return runs.outcome_of(row, str(getattr(self._store, "path", "?")))


def load_history(self: SqliteRuntime, exec_id: str | ExecutionId) -> list[HistoryEvent]:
    """Every recorded event of the run, in order."""
    return self._store.load_events(self._require(exec_id))


def activity_attempts(
    self: SqliteRuntime, exec_id: str | ExecutionId, name: str | None = None
) -> list[ActivityAttempt]:
    """Finished attempts of the run's activities (of one name, or all)."""
    return self._store.activity_attempts(self._require(exec_id), name)


def successor(self: SqliteRuntime, exec_id: str | ExecutionId) -> ExecutionId | None:
    """The run that continued this one (continue-as-new or retry), if any."""
    row = self._store.execution(self._require(exec_id))
    return ExecutionId(row.successor) if row and row.successor else None


def parent_execution(
    self: SqliteRuntime, exec_id: str | ExecutionId
) -> ExecutionId | None:
    """The parent of a child run, if any."""
    row = self._store.execution(self._require(exec_id))
    return ExecutionId(row.parent_exec_id) if row and row.parent_exec_id else None


def describe(self: SqliteRuntime, exec_id: str | ExecutionId) -> ExecutionDetail:
    """One run with its payloads as Stored values."""
    detail = self._store.describe(self._require(exec_id))
    if detail is None:
        raise ExecutionNotFound(exec_id=exec_id)
    return detail


def llm_ledger(self: SqliteRuntime, exec_id: str | ExecutionId) -> list[LedgerRow]:
    """The run's LLM calls, in recording order."""
    return self._store.llm_ledger(self._require(exec_id))


def list_executions(
    self: SqliteRuntime, flt: ExecutionFilter | None = None
) -> ExecutionPage:
    """One page of runs, newest first, without payloads (`page.next` pages on)."""
    return listing.list_executions(self._store, flt)


def visit_executions(
    self: SqliteRuntime,
    flt: ExecutionFilter | None,
    fn: Callable[[ExecutionDetail], object],
) -> int | None:
    """Call `fn` on each run of the page, with payloads, under one read snapshot; next cursor."""
    return listing.visit_executions(self._store, flt, fn)


def counts_by_state(self: SqliteRuntime) -> dict[str, int]:
    """How many runs are in each state."""
    return self._store.counts_by_state()


def llm_totals(self: SqliteRuntime, exec_id: str | ExecutionId) -> LedgerTotals:
    """The run's LLM calls summed: calls, tokens in and out, latency."""
    return self._store.llm_totals(self._require(exec_id))


def where_waiting(
    self: SqliteRuntime, exec_id: str | ExecutionId
) -> tuple[RunWait, ...]:
    """What a running run is blocked on now (empty once it has ended); writes nothing.

    Replays the run to its frontier with the registered code: signal
    waits (with the payload type a `receive_signal` call or a handler
    declares), armed timers (due time), activities, children and awaited
    runs, mutex keys (runs ahead in the queue) and `await_condition`
    predicates, each with the user-code line that waits when known.

    Raises:
        ExecutionNotFound, UnknownWorkflow (the code is not registered),
        NonDeterminismDetected, HarvestError (the code raised before parking).
    """
    return waiting.where_waiting(
        self._store, self.registry, self.clock, self._require(exec_id)
    )


def stack(
    self: SqliteRuntime, exec_id: str | ExecutionId
) -> tuple[CoroutineStack, ...]:
    """Where each of a running run's workflow coroutines is suspended in the user's code.

    The body's task first, then gather children and handler tasks; a
    body that raised (a panicking run) gives its traceback instead.
    Empty once the run has ended; writes nothing.

    Raises:
        ExecutionNotFound, UnknownWorkflow, NonDeterminismDetected,
        HarvestError (the code raised before parking).
    """
    return waiting.stack(self._store, self.registry, self.clock, self._require(exec_id))
