"""The serving process of bench/serve_bench.py (not a benchmark itself).

serving_child.py DB idle SECONDS   serve with parked runs; print the CPU used over SECONDS
serving_child.py DB serve          serve until SIGTERM (prints "serving" when ready)
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from typing import Any

from harvest_engine import SqliteRuntime, WorkflowContext, workflow


@workflow
async def waits_for_go(ctx: WorkflowContext, _: Any) -> Any:
    """Park until a "go" signal, then complete with its payload."""
    return await ctx.wait_for_signal("go")


@workflow
async def sleeps_long(ctx: WorkflowContext, _: Any) -> str:
    """Park on an hour-long durable timer."""
    await ctx.sleep("1h")
    return "woke"


async def idle(path: str, seconds: float) -> None:
    """Serve a file whose runs all wait; measure this process's CPU time meanwhile."""
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(waits_for_go)
        rt.register_workflow(sleeps_long)
        for _ in range(20):
            rt.start_workflow("waits_for_go")
        rt.start_workflow("sleeps_long")
        stop = asyncio.Event()
        server = asyncio.create_task(rt.serve(stop))
        await asyncio.sleep(1.0)  # the runs reach their waits
        cpu, wall = time.process_time(), time.monotonic()
        await asyncio.sleep(seconds)
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        stop.set()
        await server
    print(json.dumps({"cpu_seconds": cpu, "wall_seconds": wall}), flush=True)


async def serve(path: str) -> None:
    """Serve until SIGTERM."""
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(waits_for_go)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        print("serving", flush=True)
        await rt.serve(stop)


if __name__ == "__main__":
    if sys.argv[2] == "idle":
        asyncio.run(idle(sys.argv[1], float(sys.argv[3])))
    else:
        asyncio.run(serve(sys.argv[1]))
