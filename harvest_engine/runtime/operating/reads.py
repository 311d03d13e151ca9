"""Reads of runs: outcomes, histories, ledgers and where they wait; nothing written.

`Runtime`'s calls of the same names are one line into these (their docs are
the facade's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors import ExecutionNotFound
from harvest_engine.runtime.deciding import runs
from harvest_engine.runtime.engine import id_text
from harvest_engine.runtime.flow import waiting as flow_waiting
from harvest_engine.runtime.operating import listing
from harvest_engine.runtime.talking import waiting
from harvest_engine.states import ExecutionId, ExecutionOutcome

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.events import HistoryEvent
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.runtime.engine import Engine
    from harvest_engine.store.operations import LedgerTotals
    from harvest_engine.store.records import (
        ActivityAttempt,
        ExecutionDetail,
        ExecutionPage,
        LedgerRow,
    )
    from harvest_engine.workflow.stack import CoroutineStack
    from harvest_engine.workflow.waits import RunWait


def outcome(engine: Engine, exec_id: str | ExecutionId) -> ExecutionOutcome:
    """The stored outcome, without driving (one read of the row: none, no such run)."""
    row = engine.store.execution(id_text(exec_id))
    if row is None:
        raise ExecutionNotFound(exec_id=exec_id)
    if row.state == "ENQUEUED":
        return flow_waiting.enqueued_outcome(engine, row)
    return runs.outcome_of(row, str(getattr(engine.store, "path", "?")))


def load_history(engine: Engine, exec_id: str | ExecutionId) -> list[HistoryEvent]:
    """Every recorded event of the run, in order."""
    return engine.store.load_events(engine.require(exec_id))


def activity_attempts(
    engine: Engine, exec_id: str | ExecutionId, name: str | None = None
) -> list[ActivityAttempt]:
    """Finished attempts of the run's activities (of one name, or all)."""
    return engine.store.activity_attempts(engine.require(exec_id), name)


def successor(engine: Engine, exec_id: str | ExecutionId) -> ExecutionId | None:
    """The run that continued this one (continue-as-new or retry), if any."""
    row = engine.store.execution(engine.require(exec_id))
    return ExecutionId(row.successor) if row and row.successor else None


def parent_execution(engine: Engine, exec_id: str | ExecutionId) -> ExecutionId | None:
    """The parent of a child run, if any."""
    row = engine.store.execution(engine.require(exec_id))
    return ExecutionId(row.parent_exec_id) if row and row.parent_exec_id else None


def describe(engine: Engine, exec_id: str | ExecutionId) -> ExecutionDetail:
    """One run with its payloads as Stored values."""
    detail = engine.store.describe(engine.require(exec_id))
    if detail is None:
        raise ExecutionNotFound(exec_id=exec_id)
    return detail


def llm_ledger(engine: Engine, exec_id: str | ExecutionId) -> list[LedgerRow]:
    """The run's LLM calls, in recording order."""
    return engine.store.llm_ledger(engine.require(exec_id))


def list_executions(
    engine: Engine, flt: ExecutionFilter | None = None
) -> ExecutionPage:
    """One page of runs, newest first, without payloads (`page.next` pages on)."""
    return listing.list_executions(engine.store, flt)


def visit_executions(
    engine: Engine,
    flt: ExecutionFilter | None,
    fn: Callable[[ExecutionDetail], object],
) -> int | None:
    """Call `fn` on each run of the page, with payloads, under one read snapshot; next cursor."""
    return listing.visit_executions(engine.store, flt, fn)


def counts_by_state(engine: Engine) -> dict[str, int]:
    """How many runs are in each state."""
    return engine.store.counts_by_state()


def llm_totals(engine: Engine, exec_id: str | ExecutionId) -> LedgerTotals:
    """The run's LLM calls summed: calls, tokens in and out, latency."""
    return engine.store.llm_totals(engine.require(exec_id))


def where_waiting(engine: Engine, exec_id: str | ExecutionId) -> tuple[RunWait, ...]:
    """What a running run is blocked on now (empty once it has ended); writes nothing.

    A run waiting in its queue (ENQUEUED) says where: one "queue" wait.
    """
    text = engine.require(exec_id)
    row = engine.store.execution(text)
    if row is not None and row.state == "ENQUEUED":
        return flow_waiting.queue_wait(engine, row)
    return waiting.where_waiting(engine.store, engine.registry, engine.clock, text)


def stack(engine: Engine, exec_id: str | ExecutionId) -> tuple[CoroutineStack, ...]:
    """Where each of a running run's workflow coroutines is suspended in the user's code."""
    return waiting.stack(
        engine.store, engine.registry, engine.clock, engine.require(exec_id)
    )
