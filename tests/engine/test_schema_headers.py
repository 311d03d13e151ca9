"""The headers step (SQLite V8, Postgres step 5): an older database gains harvest_headers, keeping its runs."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import psycopg

from harvest_engine import PostgresRuntime, RunState, SqliteRuntime
from harvest_engine.store.postgres import schema as pg_schema
from harvest_engine.store.postgres.migrations import VERSION_TABLE
from harvest_engine.store.sqlite import schema as sqlite_schema
from tests.engine.test_interceptors import Recorder, register

if TYPE_CHECKING:
    from pathlib import Path

    from tests.pg_server import PostgresServer

# The version each store had before its headers step (the step's own number minus one).
SQLITE_BEFORE = next(
    n - 1
    for n in range(1, sqlite_schema.SCHEMA_VERSION + 1)
    if getattr(sqlite_schema, f"V{n}", None) is sqlite_schema.HEADERS
)
POSTGRES_BEFORE = pg_schema.MIGRATIONS.index(pg_schema.HEADERS)


async def test_a_file_from_before_the_step_gains_the_headers_table(
    db_path: Path,
) -> None:
    with SqliteRuntime.open(db_path) as rt:
        register(rt)
        exec_id = str(rt.start_workflow("chat", "hi"))
        await rt.run_until_blocked(exec_id)
    conn = sqlite3.connect(db_path)
    conn.execute("DROP TABLE harvest_headers")
    conn.execute(f"PRAGMA user_version = {SQLITE_BEFORE}")
    conn.commit()
    conn.close()
    with SqliteRuntime.open(db_path, interceptors=[Recorder()]) as rt:
        register(rt)
        rt.send_signal(exec_id, "reply", "bye")
        assert isinstance(await rt.run_until_blocked(exec_id), RunState.Completed)
        again = str(rt.start_workflow("chat", "hi"))
        assert rt.store.headers_of(again, "start", "") == '{"tag":"t1"}'
    conn = sqlite3.connect(db_path)
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.close()
    assert version == sqlite_schema.SCHEMA_VERSION


async def test_a_postgres_database_from_before_the_step_gains_the_headers_table(
    pg_server: PostgresServer,
) -> None:
    dsn = pg_server.create_database()
    try:
        with PostgresRuntime.connect(dsn) as rt:
            register(rt)
            exec_id = str(rt.start_workflow("chat", "hi"))
            await rt.run_until_blocked(exec_id)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("DROP TABLE harvest_headers")
            conn.execute(
                f"DELETE FROM {VERSION_TABLE} WHERE version > %s", (POSTGRES_BEFORE,)
            )
        with PostgresRuntime.connect(dsn, interceptors=[Recorder()]) as rt:
            register(rt)
            rt.send_signal(exec_id, "reply", "bye")
            assert isinstance(await rt.run_until_blocked(exec_id), RunState.Completed)
            again = str(rt.start_workflow("chat", "hi"))
            assert rt.store.headers_of(again, "start", "") == '{"tag":"t1"}'
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute(f"SELECT MAX(version) FROM {VERSION_TABLE}").fetchone()
        assert row is not None
        assert row[0] == pg_schema.SCHEMA_VERSION
    finally:
        pg_server.drop_database(dsn)
