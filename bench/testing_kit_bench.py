"""The testing kit's promise: a 30-day-timer workflow under WorkflowEnvironment, in wall time."""

from __future__ import annotations

import asyncio
import statistics
import time

from harvest_engine import ActivityContext, WorkflowContext, activity, workflow
from harvest_engine.testing import WorkflowEnvironment

ROUNDS = 5


@activity
def stamp(ctx: ActivityContext, n: int) -> int:
    """A trivial body, so the run ends with an activity after its timer."""
    return n + 1


@workflow
async def month_then_stamp(ctx: WorkflowContext, n: int) -> int:
    """Wait 30 days, then run one activity."""
    await ctx.sleep("30d")
    return int(await ctx.execute_activity(stamp, n))


async def _one() -> tuple[float, float]:
    """Wall seconds for the environment's start-to-close, and for the run alone."""
    began = time.perf_counter()
    async with WorkflowEnvironment.start(
        workflows=[month_then_stamp], activities=[stamp]
    ) as env:
        started = time.perf_counter()
        run = env.runtime.start_workflow("month_then_stamp", 1)
        await env.client.result(run, timeout="30s")
        ran = time.perf_counter() - started
    return time.perf_counter() - began, ran


def run() -> list[tuple[str, str]]:
    """Median of ROUNDS fresh environments (bench/__main__.py's contract)."""
    whole, runs = zip(*(asyncio.run(_one()) for _ in range(ROUNDS)), strict=True)
    return [
        (
            "30-day timer + 1 activity under WorkflowEnvironment, run only (median)",
            f"{statistics.median(runs) * 1000:.0f} ms wall (target < 1 s)",
        ),
        (
            "the same with the environment's open and close (median)",
            f"{statistics.median(whole) * 1000:.0f} ms wall",
        ),
    ]


if __name__ == "__main__":
    for name, result in run():
        print(f"{name}: {result}")
