"""A refused client command is settled at once, not kept until the one-day purge (both stores).

A command whose reply is an error changed nothing, so nothing needs its row
for an at-most-once retry: the client removes it once it read the reply, and
the serving loop's purge takes one whose client never read it after a
minute. An accepted command keeps its row (a retry under its id must still
find it) until the day is out.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from harvest_engine import (
    CommandTimedOut,
    ExecutionNotFound,
    HarvestClient,
    ManualClock,
    PostgresRuntime,
    SqliteRuntime,
    UnknownWorkflow,
    WorkflowContext,
    workflow,
)
from harvest_engine.runtime.serving import commands

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

    from tests.pg_server import PostgresServer


@workflow
async def waiter(ctx: WorkflowContext, _: Any) -> str:
    await ctx.wait_for_signal("go")
    return "done"


class Served:
    """A store of either kind with its runtime (a manual clock) and a client."""

    def __init__(self, where: str, postgres: bool) -> None:
        self.where = where
        self.postgres = postgres
        self.clock = ManualClock()
        self.rt: SqliteRuntime = (
            PostgresRuntime.connect(where, clock=self.clock)
            if postgres
            else SqliteRuntime.open(where, clock=self.clock)
        )
        self.rt.register_workflow(waiter)

    def client(self) -> HarvestClient:
        if self.postgres:
            return HarvestClient.connect(self.where)
        return HarvestClient.open(self.where)

    def command_ids(self) -> list[str]:
        sql = "SELECT command_id FROM harvest_commands ORDER BY id"
        if self.postgres:
            with psycopg.connect(self.where, autocommit=True) as conn:
                return [r[0] for r in conn.execute(sql).fetchall()]
        conn = sqlite3.connect(self.where)
        try:
            return [r[0] for r in conn.execute(sql).fetchall()]
        finally:
            conn.close()

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        stop = asyncio.Event()
        server = asyncio.create_task(self.rt.serve(stop, poll_interval="5ms"))
        try:
            yield
        finally:
            stop.set()
            await asyncio.wait_for(server, 10)


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    if request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("pg_server")
        dsn = server.create_database()
        found = Served(dsn, postgres=True)
        yield found
        found.rt.close()
        server.drop_database(dsn)
    else:
        found = Served(str(tmp_path / "flows.db"), postgres=False)
        yield found
        found.rt.close()


async def test_a_refused_command_leaves_no_row_once_its_client_read_the_refusal(
    served: Served,
) -> None:
    with served.client() as client:
        async with served.serving():
            exec_id = await client.start_workflow("waiter", None, command_id="ok-1")
            with pytest.raises(UnknownWorkflow):
                await client.start_workflow("nope", None, command_id="bad-1")
            with pytest.raises(ExecutionNotFound):
                await client.send_signal("no-such-run", "go", command_id="bad-2")
            await client.send_signal(exec_id, "go", command_id="ok-2")
    assert served.command_ids() == ["ok-1", "ok-2"]


async def test_a_refused_command_nobody_read_is_purged_after_a_minute_not_a_day(
    served: Served,
) -> None:
    exec_id = served.rt.start_workflow("waiter", None)
    with served.client() as client:
        # Queued by a client that goes away before the replies (a short timeout).
        with pytest.raises(CommandTimedOut):
            await client.send_signal(
                "no-such-run", "go", timeout="1ms", command_id="bad"
            )
        with pytest.raises(CommandTimedOut):
            await client.send_signal(exec_id, "go", timeout="1ms", command_id="ok")
    commands.apply_pending(served.rt._engine)
    assert served.command_ids() == ["bad", "ok"]
    served.clock.advance("2m")
    commands.purge_applied(served.rt._engine)
    assert served.command_ids() == ["ok"]
    served.clock.advance("1d")
    commands.purge_applied(served.rt._engine)
    assert served.command_ids() == []
