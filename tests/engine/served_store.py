"""A served database of either store for client-command tests: runtime, client, command rows."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine import Clock, HarvestClient, PostgresRuntime, Runtime, SqliteRuntime

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

    import pytest

    from tests.pg_server import PostgresServer


class ServedStore:
    """A database of either store with its runtime, a client on it, and its command rows."""

    def __init__(self, where: str, postgres: bool, clock: Clock | None = None) -> None:
        self.where = where
        self.postgres = postgres
        self.rt: Runtime = (
            PostgresRuntime.connect(where, clock=clock)
            if postgres
            else SqliteRuntime.open(where, clock=clock)
        )

    def client(self) -> HarvestClient:
        if self.postgres:
            return HarvestClient.connect(self.where)
        return HarvestClient.open(self.where)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """The rows `sql` reads, through the store's own driver (no harvest code)."""
        if self.postgres:
            with psycopg.connect(self.where, autocommit=True) as conn:
                return [tuple(r) for r in conn.execute(sql).fetchall()]
        conn = sqlite3.connect(self.where)
        try:
            return [tuple(r) for r in conn.execute(sql).fetchall()]
        finally:
            conn.close()

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """The runtime serves (5 ms polls) inside the block."""
        stop = asyncio.Event()
        server = asyncio.create_task(self.rt.serve(stop, poll_interval="5ms"))
        try:
            yield
        finally:
            stop.set()
            await asyncio.wait_for(server, 10)


def served_store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock | None = None
) -> Iterator[ServedStore]:
    """The body of a fixture parametrized by store name: one ServedStore, closed after."""
    if request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("pg_server")
        dsn = server.create_database()
        found = ServedStore(dsn, postgres=True, clock=clock)
        yield found
        found.rt.close()
        server.drop_database(dsn)
    else:
        found = ServedStore(str(tmp_path / "flows.db"), postgres=False, clock=clock)
        yield found
        found.rt.close()
