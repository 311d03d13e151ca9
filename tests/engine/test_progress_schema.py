"""Schema step of issue 28 (SQLite v5, Postgres 2): a file or database of the version before takes it."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine import (
    PostgresRuntime,
    SqliteReader,
    SqliteRuntime,
    StartOptions,
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
async def says(ctx: WorkflowContext, _: Any) -> str:
    ctx.set_event("k", 1)
    ctx.write_stream("s", "a")
    ctx.set_current_details("busy")
    await ctx.wait_for_signal("go")
    return "ok"


def _v4_file(path: Path) -> None:
    conn = sqlite3.connect(path)
    for step in STEPS[:4]:
        step(conn)
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()


async def test_a_version_4_file_gains_progress_on_open(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    _v4_file(path)
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
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(
        STEPS
    )  # and later steps
    conn.close()


async def _first(stream: Any) -> Any:
    async for item in stream:
        yield item
        return


async def test_a_version_1_postgres_database_gains_progress(
    pg_server: PostgresServer,
) -> None:
    dsn = pg_server.create_database()
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                f"CREATE TABLE {VERSION_TABLE} (version INTEGER PRIMARY KEY, "
                "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            conn.execute(pg_schema.MIGRATIONS[0].encode())
            conn.execute(f"INSERT INTO {VERSION_TABLE} (version) VALUES (1)")
        with PostgresRuntime.connect(dsn) as rt:
            rt.register_workflow(says)
            exec_id = rt.start_workflow_with_options(
                "says", None, StartOptions(details="d1")
            ).exec_id
            await rt.run_until_blocked(exec_id)
            assert rt.events(exec_id) == {"k": 1}
            assert rt.describe(exec_id).details == "d1"
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute(f"SELECT MAX(version) FROM {VERSION_TABLE}").fetchone()
        assert row is not None
        assert row[0] == pg_schema.SCHEMA_VERSION  # progress and every later step
    finally:
        pg_server.drop_database(dsn)
