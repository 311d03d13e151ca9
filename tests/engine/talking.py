"""Helpers for the talking-to-runs tests: the file's rows, and priors in a chosen state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine.events import HistoryEvent
from harvest_engine.store.postgres.store import PostgresStore
from harvest_engine.store.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from harvest_engine import ExecutionId, SqliteRuntime

_TABLES = (
    "harvest_executions",
    "harvest_events",
    "harvest_tasks",
    "harvest_timers",
    "harvest_signals",
    "harvest_activity_attempts",
    "harvest_mutexes",
    "harvest_workflow_logs",
)


def file_rows(rt: SqliteRuntime) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table a run touches, in a stable order (either store)."""
    store = rt.store
    assert isinstance(store, SqliteStore | PostgresStore)
    conn: Any = store.connection
    return {
        table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
        for table in _TABLES
    }


def run_count(rt: SqliteRuntime) -> int:
    """How many runs the file holds."""
    return sum(rt.counts_by_state().values())


def seal_as(
    rt: SqliteRuntime, exec_id: ExecutionId | str, state: str, reason: str
) -> None:
    """End a RUNNING run the way cancel / terminate do: WorkflowCancelled, then the seal."""
    with rt.store.write() as txn:
        row = txn.execution(str(exec_id))
        assert row is not None
        now = rt.clock.now()
        txn.append_events(
            row.exec_id,
            [
                HistoryEvent(
                    seq=row.next_seq,
                    type="WorkflowCancelled",
                    at=now,
                    attrs={"reason": reason},
                )
            ],
        )
        txn.seal(row.exec_id, state, closed_at=now)
    rt.cache.evict(str(exec_id))


def request_cancel(rt: SqliteRuntime, exec_id: ExecutionId | str, reason: str) -> None:
    """A pending cooperative cancel: `rt.cancel` where it exists, else the stored request."""
    cancel = getattr(rt, "cancel", None)
    if cancel is not None:
        cancel(exec_id, reason)
        return
    with rt.store.write() as txn:
        txn.update_execution(str(exec_id), cancel_reason=reason)


def event_types(rt: SqliteRuntime, exec_id: ExecutionId | str) -> list[str]:
    """The run's event types, in order."""
    return [event.type for event in rt.load_history(exec_id)]
