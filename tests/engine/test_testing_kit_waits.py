"""WorkflowEnvironment skips time past waits that poll: a parent on a sleeping child, a mutex queue.

Found by the deterministic simulation (seed 81): a run parked on another
run or on a mutex keeps its decision flag, so `next_wakeup()` reads "now"
while it waits and the skipper never jumped to the timer that moves things.
"""

from __future__ import annotations

import asyncio

from harvest_engine import ExecutionOutcome, WorkflowContext, workflow
from harvest_engine.testing import WorkflowEnvironment


@workflow
async def napper(ctx: WorkflowContext, n: int) -> int:
    await ctx.sleep("1d")
    return n


@workflow
async def parent_of_napper(ctx: WorkflowContext, n: int) -> int:
    return int(await ctx.spawn_child_workflow(napper, n)) + 1


@workflow
async def locked_nap(ctx: WorkflowContext, n: int) -> int:
    async with ctx.mutex("one") as guard:
        await ctx.sleep("2h")
        return int(guard.lock_seq)


async def test_a_parent_waiting_on_a_sleeping_child_skips_the_day() -> None:
    async with WorkflowEnvironment.start(workflows=[napper, parent_of_napper]) as env:
        run = env.runtime.start_workflow("parent_of_napper", 1)
        outcome = await asyncio.wait_for(env.client.result(run), 15)
    assert outcome == ExecutionOutcome.Completed(output=2)


async def test_runs_queued_on_a_mutex_skip_the_holders_timer() -> None:
    async with WorkflowEnvironment.start(workflows=[locked_nap]) as env:
        first = env.runtime.start_workflow("locked_nap", 1)
        second = env.runtime.start_workflow("locked_nap", 2)
        outcomes = [
            await asyncio.wait_for(env.client.result(run), 15)
            for run in (first, second)
        ]
    assert sorted(o.output for o in outcomes) == [1, 2]  # type: ignore[union-attr]
