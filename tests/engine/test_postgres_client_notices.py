"""A Postgres client hears its command's reply and its run's end (LISTEN/NOTIFY) instead of polling.

The serving worker here polls only every 30 seconds and the client's
safety re-check is stretched to 30 seconds too, so a wait that ends within
the test's few seconds ended by a notice; the client's reads are counted to
show it did not poll meanwhile (a poll reads every few milliseconds).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from harvest_engine import (
    ExecutionOutcome,
    HarvestClient,
    PostgresRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.client import waits
from harvest_engine.store.postgres import client_notices

if TYPE_CHECKING:
    from collections.abc import Callable

SLOW_POLL = "30s"
WAIT = 0.5  # how long each test keeps a client waiting before the answer comes


@workflow
async def parked(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("go")


class Serving:
    """A worker serving in this loop with a slow poll; stopped and closed at the end."""

    def __init__(self, dsn: str) -> None:
        self.rt = PostgresRuntime.connect(dsn, worker_id="server")
        self.rt.register_workflow(parked)
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(
            self.rt.serve(self.stop, poll_interval=SLOW_POLL)
        )

    async def __aenter__(self) -> PostgresRuntime:
        await asyncio.sleep(0.2)  # the loop reaches its first sleep
        return self.rt

    async def __aexit__(self, *_: object) -> None:
        self.stop.set()
        await self.task
        self.rt.close()


class Reads:
    """Counts the calls of some methods of one object (the client's reads)."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, target: object, *names: str
    ) -> None:
        self.count = 0
        for name in names:
            monkeypatch.setattr(target, name, self._counted(getattr(target, name)))

    def _counted(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return fn(*args, **kwargs)

        return call


@pytest.fixture(autouse=True)
def no_safety_recheck(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a notice can end a wait within the tests' seconds."""
    monkeypatch.setattr(waits, "SAFETY_RECHECK_SECONDS", 30.0)


async def test_result_returns_on_the_runs_end_notice_without_polling(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Serving(pg_dsn):
        with (
            HarvestClient.connect(pg_dsn) as client,
            HarvestClient.connect(pg_dsn) as sender,
        ):
            exec_id = await client.start_workflow("parked", timeout="5s")
            reads = Reads(monkeypatch, client._reader, "describe", "data_version")

            async def go_later() -> None:
                await asyncio.sleep(WAIT)
                await sender.send_signal(exec_id, "go", 7, timeout="5s")

            later = asyncio.create_task(go_later())
            outcome = await client.result(exec_id, timeout="10s")
            await later
    assert outcome == ExecutionOutcome.Completed(output=7)
    assert reads.count <= 3  # the first read, the one after the notice (a poll: ~100)


async def test_a_command_returns_on_its_reply_notice_without_polling(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    PostgresRuntime.connect(pg_dsn).close()  # the schema
    with HarvestClient.connect(pg_dsn) as client:
        reads = Reads(monkeypatch, client._queue, "reply", "data_version")
        # Queued before anyone serves: the reply comes when a worker starts.
        pending = asyncio.create_task(client.start_workflow("parked", timeout="10s"))
        await asyncio.sleep(WAIT)
        assert not pending.done()
        async with Serving(pg_dsn) as rt:
            exec_id = await pending
            assert rt.describe(exec_id).state == "RUNNING"
    assert reads.count <= 3  # the first read, the one after the notice (a poll: ~250)


def listeners(dsn: str) -> int:
    """How many client LISTEN connections the server has."""
    with psycopg.connect(dsn, autocommit=True) as admin:
        row = admin.execute(
            "SELECT COUNT(*) FROM pg_stat_activity "
            "WHERE query LIKE 'LISTEN harvest_reply%'"
        ).fetchone()
    return int(row[0]) if row is not None else 0


async def test_a_wait_whose_listen_connection_dies_polls_then_listens_again(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_notices, "REVIVE_EVERY", 0.2)
    async with Serving(pg_dsn):
        with (
            HarvestClient.connect(pg_dsn) as client,
            HarvestClient.connect(pg_dsn) as sender,
        ):
            exec_id = await client.start_workflow("parked", timeout="5s")
            await sender.start_workflow("parked", timeout="5s")  # its own LISTEN
            waiting = asyncio.create_task(client.result(exec_id, timeout="10s"))
            await asyncio.sleep(0.1)
            with psycopg.connect(pg_dsn, autocommit=True) as admin:
                killed = admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE query LIKE 'LISTEN harvest_reply%'"
                ).fetchall()
            assert killed == [(True,), (True,)]
            # The waiter polls, and listens again within a few revive periods.
            for _ in range(100):
                if listeners(pg_dsn) == 1:
                    break
                await asyncio.sleep(0.05)
            assert listeners(pg_dsn) == 1
            assert not waiting.done()
            await sender.send_signal(exec_id, "go", "after", timeout="5s")
            outcome = await waiting
    assert outcome == ExecutionOutcome.Completed(output="after")


async def test_a_client_hears_notices_on_each_event_loop_it_is_used_from(
    pg_dsn: str,
) -> None:
    PostgresRuntime.connect(pg_dsn).close()
    with HarvestClient.connect(pg_dsn) as client:

        async def started() -> str:
            async with Serving(pg_dsn):
                return str(await client.start_workflow("parked", timeout="5s"))

        first = await started()

        def in_another_loop() -> str:
            return asyncio.run(started())

        second = await asyncio.to_thread(in_another_loop)
    assert first != second
