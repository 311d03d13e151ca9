"""Files and databases at an older schema version, for the tests of each schema step's migration."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import psycopg

from harvest_engine.store.postgres import schema as pg_schema
from harvest_engine.store.postgres.migrations import VERSION_TABLE
from harvest_engine.store.sqlite.migrations import STEPS

if TYPE_CHECKING:
    from pathlib import Path

    from tests.pg_server import PostgresServer


def sqlite_file_at(path: Path, version: int) -> None:
    """Write a SQLite file as harvest left it at schema `version` (its first steps only)."""
    conn = sqlite3.connect(path)
    try:
        for step in STEPS[:version]:
            step(conn)
        conn.execute(f"PRAGMA user_version = {version}")
        conn.commit()
    finally:
        conn.close()


def sqlite_version(path: Path) -> int:
    """The schema version a SQLite file says it is at."""
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def postgres_database_at(server: PostgresServer, version: int) -> str:
    """A new database as harvest left it at schema `version`; its DSN."""
    dsn = server.create_database()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            f"CREATE TABLE {VERSION_TABLE} (version INTEGER PRIMARY KEY, "
            "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        for number, step in enumerate(pg_schema.MIGRATIONS[:version], 1):
            conn.execute(step.encode())
            conn.execute(f"INSERT INTO {VERSION_TABLE} (version) VALUES ({number})")
    return dsn


def postgres_version(dsn: str) -> int:
    """The newest schema step a database records."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(f"SELECT MAX(version) FROM {VERSION_TABLE}").fetchone()
    assert row is not None
    return int(row[0])
