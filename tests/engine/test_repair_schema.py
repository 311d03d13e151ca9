"""Schema step of issue 27 (SQLite v9, Postgres 6): a file or database from before it pauses and resets."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine import (
    ExecutionFilter,
    PostgresRuntime,
    SqliteReader,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.store.postgres import schema as pg_schema
from harvest_engine.store.postgres.migrations import VERSION_TABLE
from harvest_engine.store.sqlite.migrations import STEPS

if TYPE_CHECKING:
    from pathlib import Path

    from tests.pg_server import PostgresServer


@workflow
async def waits(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.sleep(1)
    return await ctx.wait_for_signal("go")


async def test_a_version_5_file_gains_pause_and_reset_on_open(tmp_path: Path) -> None:
    path = tmp_path / "v5.db"
    conn = sqlite3.connect(path)
    for step in STEPS[:5]:
        step(conn)
    conn.execute("PRAGMA user_version = 5")
    conn.commit()
    conn.close()
    with SqliteReader.open(path) as reader:  # an old file still lists, paused or not
        assert reader.list_executions(ExecutionFilter().paused()).executions == []
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(waits)
        exec_id = rt.start_workflow("waits", None)
        await rt.run_until_blocked(exec_id)
        rt.pause(exec_id, "after the migration")
        assert rt.describe(exec_id).paused
        rt.unpause(exec_id)
        new = rt.reset(exec_id, reason="after the migration")
        assert rt.describe(new).reset_from == exec_id
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(STEPS)
    conn.close()


async def test_a_version_2_postgres_database_gains_pause_and_reset(
    pg_server: PostgresServer,
) -> None:
    dsn = pg_server.create_database()
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                f"CREATE TABLE {VERSION_TABLE} (version INTEGER PRIMARY KEY, "
                "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            for version, step in enumerate(pg_schema.MIGRATIONS[:2], 1):
                conn.execute(step.encode())
                conn.execute(
                    f"INSERT INTO {VERSION_TABLE} (version) VALUES ({version})"
                )
        with PostgresRuntime.connect(dsn) as rt:
            rt.register_workflow(waits)
            exec_id = rt.start_workflow("waits", None)
            await rt.run_until_blocked(exec_id)
            rt.pause(exec_id, "after the migration")
            assert rt.describe(exec_id).paused
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute(f"SELECT MAX(version) FROM {VERSION_TABLE}").fetchone()
        assert row is not None
        assert row[0] == pg_schema.SCHEMA_VERSION  # every later step too
    finally:
        pg_server.drop_database(dsn)
