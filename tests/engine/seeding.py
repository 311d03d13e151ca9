"""Test data written straight through SqliteStore: runs in any state, with attributes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.events import HistoryEvent
from harvest_engine.store.rows import NewExecution

if TYPE_CHECKING:
    from harvest_engine.store.sqlite.store import SqliteStore

T0 = datetime(2030, 1, 1, tzinfo=UTC)

# The event a sealed run's history ends with, so a seeded run reads as sound.
CLOSING_EVENT = {
    "COMPLETED": "WorkflowCompleted",
    "FAILED": "WorkflowFailed",
    "CANCELLED": "WorkflowCancelled",
    "TERMINATED": "WorkflowTerminated",
    "TIMED_OUT": "WorkflowExecutionTimedOut",
    "CONTINUED_AS_NEW": "WorkflowContinuedAsNew",
}


def seed_run(
    store: SqliteStore,
    name: str = "order",
    *,
    workflow_id: str | None = None,
    state: str = "RUNNING",
    started_at: datetime = T0,
    closed_at: datetime | None = None,
    input: Any = None,
    output: Any = None,
    memo: Any = None,
    search_attributes: dict[str, Any] | None = None,
    parent_exec_id: str | None = None,
) -> str:
    """Insert one run (sealed in `state` unless RUNNING); returns its exec id."""
    exec_id = str(uuid.uuid4())
    new = NewExecution(
        exec_id=exec_id,
        workflow_name=name,
        workflow_id=workflow_id or exec_id,
        input=payloads.dumps(input),
        parent_exec_id=parent_exec_id,
        memo=None if memo is None else payloads.dumps(memo),
        search_attributes=(
            None if search_attributes is None else payloads.dumps(search_attributes)
        ),
    )
    started = HistoryEvent(
        seq=1,
        type="WorkflowStarted",
        at=started_at,
        attrs={"exec_id": exec_id, "workflow_name": name, "input": input},
    )
    with store.write() as txn:
        txn.insert_execution(new, started)
        if state != "RUNNING":
            closed = closed_at or started_at + timedelta(seconds=1)
            closing = HistoryEvent(
                seq=2,
                type=CLOSING_EVENT.get(state, "WorkflowTerminated"),
                at=closed,
                attrs={},
            )
            txn.append_events(exec_id, [closing])
            txn.seal(
                exec_id,
                state,
                closed_at=closed,
                output=None if output is None else payloads.dumps(output),
            )
    return exec_id


def seed_many(store: SqliteStore, count: int, **kwargs: Any) -> list[str]:
    """`count` runs, one second apart, oldest first."""
    start: datetime = kwargs.pop("started_at", T0)
    return [
        seed_run(store, started_at=start + timedelta(seconds=i), **kwargs)
        for i in range(count)
    ]
