"""A Postgres runtime that knows a workflow parked on a signal, and a task to add (store-level tests)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from harvest_engine import ManualClock, PostgresRuntime, WorkflowContext, workflow
from harvest_engine.store.postgres.store import PostgresStore
from harvest_engine.store.rows import NewTask

AT = datetime(2030, 1, 1, tzinfo=UTC)


@workflow
async def parked(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("go")


def open_parked(dsn: str) -> PostgresRuntime:
    """A runtime on `dsn` (a manual clock) that knows `parked`."""
    runtime = PostgresRuntime.connect(dsn, clock=ManualClock())
    runtime.register_workflow(parked)
    return runtime


def store_of(rt: PostgresRuntime) -> PostgresStore:
    store = rt.store
    assert isinstance(store, PostgresStore)
    return store


def new_task(exec_id: str, activity_id: int) -> NewTask:
    return NewTask(
        exec_id=exec_id,
        activity_id=activity_id,
        activity_name="shout",
        input='"hi"',
        queue="default",
        max_attempts=3,
        ready_at=AT + timedelta(microseconds=7),
        retry_policy='{"max_attempts": 3}',
        start_to_close=1.25,
        schedule_to_close_at=AT + timedelta(minutes=5),
        idempotency_key=f"{exec_id}:{activity_id}",
    )
