"""A `PostgresRuntime` worker process of bench/pg_bench.py (not a benchmark itself).

pg_worker.py DSN   connect, print "ready", wait for "go" on stdin, serve until SIGTERM
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any

from harvest_engine import (
    ActivityContext,
    PostgresRuntime,
    WorkflowContext,
    activity,
    workflow,
)


@activity
def fetch(ctx: ActivityContext, n: int) -> int:
    """First of three small steps."""
    return n + 1


@activity
def double(ctx: ActivityContext, n: int) -> int:
    """Second step."""
    return n * 2


@activity
def label(ctx: ActivityContext, n: int) -> str:
    """Third step."""
    return f"got {n}"


@workflow
async def three_steps(ctx: WorkflowContext, n: int) -> str:
    """A run of three activities, one after the other."""
    a = await ctx.execute_activity(fetch, n)
    b = await ctx.execute_activity(double, a)
    return await ctx.execute_activity(label, b)


@workflow
async def waits_for_go(ctx: WorkflowContext, _: Any) -> Any:
    """Park until a "go" signal, then complete with its payload."""
    return await ctx.wait_for_signal("go")


def register(rt: PostgresRuntime) -> None:
    """The bench's workflows and activities on a worker (or the process that starts runs)."""
    for act in (fetch, double, label):
        rt.register_activity(act)
    rt.register_workflow(three_steps)
    rt.register_workflow(waits_for_go)


async def serve(dsn: str) -> None:
    """Serve once the parent says go, until SIGTERM."""
    with PostgresRuntime.connect(dsn) as rt:
        register(rt)
        print("ready", flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.readline)
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        await rt.serve(stop)


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))
