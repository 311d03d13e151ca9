"""Serving on Postgres: LISTEN/NOTIFY wakes a serving worker at once, for clients and other workers.

Each serving loop here polls only every 30 seconds, so a command or a run
that is served within the test's few seconds was woken by a notice.
"""

from __future__ import annotations

import asyncio

from harvest_engine import (
    ActivityContext,
    ExecutionOutcome,
    HarvestClient,
    PostgresRuntime,
    WorkflowContext,
    activity,
    workflow,
)

SLOW_POLL = "30s"


@activity
def shout(ctx: ActivityContext, text: str) -> str:
    return text.upper()


@workflow
async def one_shout(ctx: WorkflowContext, text: str) -> str:
    return await ctx.execute_activity(shout, text)


def worker(dsn: str, worker_id: str) -> PostgresRuntime:
    rt = PostgresRuntime.connect(dsn, worker_id=worker_id)
    rt.register_workflow(one_shout)
    rt.register_activity(shout)
    return rt


class Serving:
    """A worker serving in this loop with a slow poll; stopped and closed at the end."""

    def __init__(self, rt: PostgresRuntime) -> None:
        self.rt = rt
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(rt.serve(self.stop, poll_interval=SLOW_POLL))

    async def __aenter__(self) -> PostgresRuntime:
        await asyncio.sleep(0.2)  # the loop reaches its first sleep
        return self.rt

    async def __aexit__(self, *_: object) -> None:
        self.stop.set()
        await self.task
        self.rt.close()


async def test_a_client_command_is_served_at_once_not_at_the_next_poll(
    pg_dsn: str,
) -> None:
    async with Serving(worker(pg_dsn, "server")):
        with HarvestClient.connect(pg_dsn) as client:
            exec_id = await client.start_workflow("one_shout", "hi", timeout="5s")
            outcome = await client.result(exec_id, timeout="5s")
    assert outcome == ExecutionOutcome.Completed(output="HI")


async def test_a_run_another_worker_starts_is_served_at_once(pg_dsn: str) -> None:
    async with Serving(worker(pg_dsn, "server")) as server:
        other = worker(pg_dsn, "other")
        try:
            exec_id = other.start_workflow("one_shout", "hey")
            for _ in range(250):
                if server.outcome(exec_id) != ExecutionOutcome.Running():
                    break
                await asyncio.sleep(0.02)
            assert other.outcome(exec_id) == ExecutionOutcome.Completed(output="HEY")
        finally:
            other.close()
