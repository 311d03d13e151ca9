"""A client command retried with its command id is applied once, on both stores.

`CommandTimedOut` leaves the command queued; calling again used to queue a
second one (a signal delivered twice). Repeating the call with
``command_id=`` (the timed-out command's, or the caller's own key) queues
nothing new and awaits the first command's reply.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from click.testing import CliRunner

from harvest_engine import (
    CommandTimedOut,
    ExecutionOutcome,
    HarvestClient,
    InvalidName,
    PostgresRuntime,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.cli.app import main
from harvest_engine.runtime.serving import commands

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

    from tests.pg_server import PostgresServer


@workflow
async def counter(ctx: WorkflowContext, start: int) -> int:
    total = start
    while True:
        step = await ctx.wait_for_signal("add")
        if step is None:
            return total
        total += step


class Target:
    """A served database of either store: its runtime, a client, and its command rows."""

    def __init__(self, where: str, postgres: bool) -> None:
        self.where = where
        self.postgres = postgres
        self.rt: SqliteRuntime = (
            PostgresRuntime.connect(where) if postgres else SqliteRuntime.open(where)
        )
        self.rt.register_workflow(counter)

    def client(self) -> HarvestClient:
        if self.postgres:
            return HarvestClient.connect(self.where)
        return HarvestClient.open(self.where)

    def commands(self) -> list[tuple[Any, ...]]:
        """(kind, args) of every queued or applied command, oldest first."""
        sql = "SELECT kind, args FROM harvest_commands ORDER BY id"
        if self.postgres:
            with psycopg.connect(self.where, autocommit=True) as conn:
                return conn.execute(sql).fetchall()
        conn = sqlite3.connect(self.where)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()

    @asynccontextmanager
    async def served(self) -> AsyncIterator[None]:
        stop = asyncio.Event()
        server = asyncio.create_task(self.rt.serve(stop, poll_interval="5ms"))
        try:
            yield
        finally:
            stop.set()
            await asyncio.wait_for(server, 10)


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    if request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("pg_server")
        dsn = server.create_database()
        found = Target(dsn, postgres=True)
        yield found
        found.rt.close()
        server.drop_database(dsn)
    else:
        found = Target(str(tmp_path / "flows.db"), postgres=False)
        yield found
        found.rt.close()


async def test_a_signal_retried_with_its_command_id_after_timeouts_is_applied_once(
    target: Target,
) -> None:
    exec_id = target.rt.start_workflow("counter", 1)
    with target.client() as client:
        with pytest.raises(CommandTimedOut) as first:
            await client.send_signal(exec_id, "add", 2, timeout="50ms")
        key = first.value.command_id
        with pytest.raises(CommandTimedOut) as again:
            await client.send_signal(exec_id, "add", 2, timeout="50ms", command_id=key)
        assert again.value.command_id == key
        assert len(target.commands()) == 1
        async with target.served():
            await client.send_signal(exec_id, "add", 2, timeout="5s", command_id=key)
            await client.send_signal(exec_id, "add", None, timeout="5s")
            outcome = await client.result(exec_id, timeout="5s")
    assert outcome == ExecutionOutcome.Completed(output=3)
    assert [kind for kind, _ in target.commands()] == ["send_signal", "send_signal"]


async def test_a_start_repeated_with_its_command_id_returns_the_run_it_started(
    target: Target,
) -> None:
    with target.client() as client:
        async with target.served():
            first = await client.start_workflow("counter", 5, command_id="order-17")
            second = await client.start_workflow("counter", 5, command_id="order-17")
            other = await client.start_workflow("counter", 5)
        assert first == second != other
        assert len(client.list_executions().executions) == 2


async def test_a_command_id_naming_another_command_is_refused_and_queues_nothing(
    target: Target,
) -> None:
    exec_id = target.rt.start_workflow("counter", 0)
    with target.client() as client:
        async with target.served():
            await client.send_signal(exec_id, "add", 2, command_id="k")
            with pytest.raises(ValueError, match="already names another command"):
                await client.send_signal(exec_id, "add", 3, command_id="k")
            with pytest.raises(ValueError, match="already names another command"):
                await client.cancel(exec_id, command_id="k")
            with pytest.raises(InvalidName, match="command id"):
                await client.send_signal(exec_id, "add", 3, command_id="  ")
            with pytest.raises(InvalidName, match="command id"):
                await client.send_signal(exec_id, "add", 3, command_id=7)  # type: ignore[arg-type]
        assert len(target.commands()) == 1
        assert [e.type for e in client.load_history(exec_id)].count(
            "SignalReceived"
        ) == 1


def test_the_harvest_command_prints_the_id_to_retry_with_and_applies_a_retry_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cli.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(counter)
        exec_id = str(rt.start_workflow("counter", 1))
        signal = ["signal", str(path), exec_id, "add", "2"]
        timed_out = CliRunner().invoke(main, [*signal, "--timeout", "50ms"])
        assert timed_out.exit_code == 8
        retry_with = timed_out.output.strip().rsplit(" ", 1)[-1]
        assert f"--command-id {retry_with}" in timed_out.output
        again = CliRunner().invoke(
            main, [*signal, "--timeout", "50ms", "--command-id", retry_with]
        )
        assert again.exit_code == 8
        commands.apply_pending(rt._engine)  # a serving process applies the queue
        retried = CliRunner().invoke(main, [*signal, "--command-id", retry_with])
        assert retried.exit_code == 0, retried.output
        asyncio.run(rt.run_until_idle())
        received = [
            e.attrs["payload"]
            for e in rt.load_history(exec_id)
            if e.type == "SignalReceived"
        ]
    assert received == [2]
