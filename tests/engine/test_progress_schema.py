"""Schema step of issue 28 (SQLite v5, Postgres 2): a file or database of the version before takes it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import (
    PostgresRuntime,
    SqliteReader,
    SqliteRuntime,
    StartOptions,
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
async def says(ctx: WorkflowContext, _: Any) -> str:
    ctx.set_event("k", 1)
    ctx.write_stream("s", "a")
    ctx.set_current_details("busy")
    await ctx.wait_for_signal("go")
    return "ok"


async def test_a_version_4_file_gains_progress_on_open(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    sqlite_file_at(path, 4)
    with SqliteReader.open(path) as reader:  # an old file still lists and describes
        assert reader.list_executions().executions == []
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(says)
        exec_id = rt.start_workflow_with_options(
            "says", None, StartOptions(summary="s1")
        ).exec_id
        await rt.run_until_blocked(exec_id)
        assert rt.events(exec_id) == {"k": 1}
        assert [v async for v in _first(rt.read_stream(exec_id, "s"))] == [(0, "a")]
        detail = rt.describe(exec_id)
        assert (detail.summary, detail.current_details) == ("s1", "busy")
    assert sqlite_version(path) == len(STEPS)  # and later steps


async def _first(stream: Any) -> Any:
    async for item in stream:
        yield item
        return


async def test_a_version_1_postgres_database_gains_progress(
    pg_server: PostgresServer,
) -> None:
    dsn = postgres_database_at(pg_server, 1)
    try:
        with PostgresRuntime.connect(dsn) as rt:
            rt.register_workflow(says)
            exec_id = rt.start_workflow_with_options(
                "says", None, StartOptions(details="d1")
            ).exec_id
            await rt.run_until_blocked(exec_id)
            assert rt.events(exec_id) == {"k": 1}
            assert rt.describe(exec_id).details == "d1"
        # progress and every later step
        assert postgres_version(dsn) == pg_schema.SCHEMA_VERSION
    finally:
        pg_server.drop_database(dsn)
