"""The flow-shaping schema step (SQLite v6, Postgres step 3): a database of the step before migrates in place."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine import (
    ExecutionOutcome,
    PostgresRuntime,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.store.postgres.schema import SCHEMA_VERSION as PG_VERSION
from harvest_engine.store.sqlite.schema import SCHEMA_VERSION as SQLITE_VERSION

if TYPE_CHECKING:
    from pathlib import Path

    from harvest_engine import ManualClock
    from tests.pg_server import PostgresServer

TABLES = ("harvest_held_starts", "harvest_held_inputs", "harvest_breakers")
# The tables of the later steps (flow control, headers): a file of the step before has none.
LATER_TABLES = ("harvest_flow_queues", "harvest_flow_waits", "harvest_headers")


@workflow
async def plain(ctx: WorkflowContext, x: int) -> int:
    return x + 1


@workflow(debounce="5s")
async def later(ctx: WorkflowContext, x: int) -> int:
    return x


async def _use(rt: SqliteRuntime, clock: ManualClock, before: Any) -> None:
    """The run from before the step is there; a debounced start works after it."""
    rt.register_workflow(plain)
    rt.register_workflow(later)
    await rt.run_until_idle()
    assert rt.outcome(before) == ExecutionOutcome.Completed(output=2)
    held = rt.start_workflow_with_id("later", "k", 7)
    clock.advance(timedelta(seconds=5))
    await rt.run_until_idle()
    assert rt.outcome(held) == ExecutionOutcome.Completed(output=7)


async def test_a_v5_file_gains_the_flow_shaping_tables(
    db_path: Path, clock: ManualClock
) -> None:
    with SqliteRuntime.open(db_path, clock=clock) as rt:
        rt.register_workflow(plain)
        before = rt.start_workflow("plain", 1)
    conn = sqlite3.connect(db_path)
    for table in (*TABLES, *LATER_TABLES):  # back to the v5 layout
        conn.execute(f"DROP TABLE {table}")
    conn.execute("DROP INDEX harvest_tasks_waiting")
    conn.execute("PRAGMA user_version = 5")
    conn.commit()
    conn.close()
    with SqliteRuntime.open(db_path, clock=clock) as rt:
        await _use(rt, clock, before)
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SQLITE_VERSION
    conn.close()


async def test_a_step_2_postgres_database_gains_the_flow_shaping_tables(
    pg_server: PostgresServer, clock: ManualClock
) -> None:
    dsn = pg_server.create_database()
    try:
        with PostgresRuntime.connect(dsn, clock=clock) as rt:
            rt.register_workflow(plain)
            before = rt.start_workflow("plain", 1)
        with psycopg.connect(dsn, autocommit=True) as conn:
            for table in (*TABLES, *LATER_TABLES):  # back to step 2's layout
                conn.execute(f"DROP TABLE {table}")
            conn.execute("DROP INDEX harvest_tasks_waiting")
            conn.execute("DELETE FROM harvest_schema_version WHERE version > 2")
        with PostgresRuntime.connect(dsn, clock=clock) as rt:
            await _use(rt, clock, before)
        with psycopg.connect(dsn, autocommit=True) as conn:
            found = conn.execute("SELECT MAX(version) FROM harvest_schema_version")
            assert found.fetchone() == (PG_VERSION,)
    finally:
        pg_server.drop_database(dsn)
