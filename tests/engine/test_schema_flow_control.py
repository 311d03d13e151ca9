"""The flow-control schema step (SQLite V5, Postgres step 2) migrates an older database.

A database of the step before migrates in place, keeps its runs, then takes queues.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine import (
    ExecutionOutcome,
    PostgresRuntime,
    Queue,
    SqliteRuntime,
    StartOptions,
    WorkflowContext,
    workflow,
)
from harvest_engine.store.postgres.migrations import VERSION_TABLE
from harvest_engine.store.postgres.schema import FLOW_CONTROL as PG_FLOW_CONTROL
from harvest_engine.store.sqlite import migrations
from harvest_engine.store.sqlite.schema import FLOW_CONTROL

if TYPE_CHECKING:
    from pathlib import Path

TABLES = ("harvest_flow_queues", "harvest_flow_waits")
PG_VERSION = 4  # the Postgres step that adds them (store/postgres/schema.py V4)
SQLITE_VERSION = 7  # the SQLite version that adds them (store/sqlite/schema.py V7)
# The tables of the later steps (headers): a database of the step before has none.
LATER_TABLES = ("harvest_headers",)


@workflow
async def echo(ctx: WorkflowContext, value: Any) -> Any:
    return value


async def test_a_sqlite_file_of_the_step_before_migrates_and_takes_queues(
    db_path: Path,
) -> None:
    with SqliteRuntime.open(db_path) as rt:
        rt.register_workflow(echo)
        old = rt.start_workflow("echo", "before")
        await rt.run_until_idle()
    conn = sqlite3.connect(db_path, isolation_level=None)
    for table in (*TABLES, *LATER_TABLES):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("DROP INDEX harvest_tasks_waiting")
    conn.execute(f"PRAGMA user_version = {SQLITE_VERSION - 1}")
    conn.close()

    with SqliteRuntime.open(db_path) as rt:
        rt.register_workflow(echo)
        rt.register_queue(Queue("after", concurrency=1))
        new = rt.start_workflow_with_options(
            "echo", "after", StartOptions(queue="after")
        )
        await rt.run_until_idle()
        assert rt.outcome(old) == ExecutionOutcome.Completed(output="before")
        assert rt.outcome(new.exec_id) == ExecutionOutcome.Completed(output="after")
    conn = sqlite3.connect(db_path)
    assert (
        conn.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION
    )
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert {*TABLES, "harvest_tasks_waiting"} <= names
    assert "harvest_flow_waits_queue" in FLOW_CONTROL


async def test_a_postgres_database_of_the_step_before_migrates_and_takes_queues(
    pg_dsn: str,
) -> None:
    with PostgresRuntime.connect(pg_dsn) as rt:
        rt.register_workflow(echo)
        old = rt.start_workflow("echo", "before")
        await rt.run_until_idle()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for table in (*TABLES, *LATER_TABLES):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("DROP INDEX harvest_tasks_waiting")
        conn.execute(f"DELETE FROM {VERSION_TABLE} WHERE version >= {PG_VERSION}")

    with PostgresRuntime.connect(pg_dsn) as rt:
        rt.register_workflow(echo)
        rt.register_queue(Queue("after", concurrency=1))
        new = rt.start_workflow_with_options(
            "echo", "after", StartOptions(queue="after")
        )
        await rt.run_until_idle()
        assert rt.outcome(old) == ExecutionOutcome.Completed(output="before")
        assert rt.outcome(new.exec_id) == ExecutionOutcome.Completed(output="after")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        versions = conn.execute(f"SELECT version FROM {VERSION_TABLE}").fetchall()
    assert (PG_VERSION,) in versions
    assert "harvest_flow_waits_queue" in PG_FLOW_CONTROL
