"""The two stores of the engine tests: where a test's databases live, and the reader type."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

import psycopg

from harvest_engine import SqliteReader, SqliteRuntime
from harvest_engine.store.postgres.reader import PostgresReader
from harvest_engine.store.postgres.store import PostgresStore
from harvest_engine.store.postgres.write_txn import PostgresWriteTxn
from harvest_engine.store.sqlite.write_txn import SqliteWriteTxn

if TYPE_CHECKING:
    from pathlib import Path

    from tests.pg_server import PostgresServer

OpenReader = Callable[..., SqliteReader | PostgresReader]
"""`open_reader(path=None)`: the read-only reader of the test's store."""


class Databases:
    """Where a test's runtimes and readers live: files, or one Postgres database per path.

    On Postgres each distinct path stands for its own fresh database, and
    opening a path again connects to the same one (a reopen is a new worker).
    """

    def __init__(self, server: PostgresServer | None) -> None:
        self.server = server
        self._dsns: dict[Path, str] = {}

    def dsn(self, path: Path) -> str:
        """The database that stands for `path` (Postgres only)."""
        assert self.server is not None
        if path not in self._dsns:
            self._dsns[path] = self.server.fresh_database()
        return self._dsns[path]

    def release(self) -> None:
        """Hand the databases back to the server for the next test."""
        if self.server is not None:
            for dsn in self._dsns.values():
                self.server.recycle_database(dsn)


def txn_class_of(rt: SqliteRuntime) -> tuple[type[object], type[Exception]]:
    """The write-transaction class of a runtime's store and the error its storage raises."""
    if isinstance(rt.store, PostgresStore):
        return PostgresWriteTxn, psycopg.OperationalError
    return SqliteWriteTxn, sqlite3.OperationalError
