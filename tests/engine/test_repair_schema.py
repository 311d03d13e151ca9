"""Schema step of issue 27 (SQLite v9, Postgres 6): a file or database from before it pauses and resets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import (
    ExecutionFilter,
    PostgresRuntime,
    SqliteReader,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.store.postgres import schema as pg_schema
from harvest_engine.store.sqlite.migrations import STEPS
from tests.schema_versions import (
    postgres_database_at,
    postgres_version,
    sqlite_file_at,
    sqlite_version,
)

if TYPE_CHECKING:
    from pathlib import Path

    from tests.pg_server import PostgresServer


@workflow
async def waits(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.sleep(1)
    return await ctx.wait_for_signal("go")


async def test_a_version_5_file_gains_pause_and_reset_on_open(tmp_path: Path) -> None:
    path = tmp_path / "v5.db"
    sqlite_file_at(path, 5)
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
    assert sqlite_version(path) == len(STEPS)


async def test_a_version_2_postgres_database_gains_pause_and_reset(
    pg_server: PostgresServer,
) -> None:
    dsn = postgres_database_at(pg_server, 2)
    try:
        with PostgresRuntime.connect(dsn) as rt:
            rt.register_workflow(waits)
            exec_id = rt.start_workflow("waits", None)
            await rt.run_until_blocked(exec_id)
            rt.pause(exec_id, "after the migration")
            assert rt.describe(exec_id).paused
        assert postgres_version(dsn) == pg_schema.SCHEMA_VERSION  # every later step too
    finally:
        pg_server.drop_database(dsn)
