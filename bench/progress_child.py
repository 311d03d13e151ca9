"""The serving process of bench/progress_bench.py (not a benchmark itself).

progress_child.py DB   serve DB (waits_for_go and streamer) until SIGTERM; print "serving"
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any

from harvest_engine import SqliteRuntime, WorkflowContext, workflow


@workflow
async def waits_for_go(ctx: WorkflowContext, _: Any) -> Any:
    """Park until a "go" signal, then complete with its payload."""
    return await ctx.wait_for_signal("go")


@workflow
async def streamer(ctx: WorkflowContext, _: Any) -> str:
    """On each "tick" signal, write the decision's clock to stream "t"; close on "end".

    `ctx.system_now()` is read when the decision that writes the value
    begins, so a reader's latency counts the whole decision and its commit.
    """
    while True:
        if await ctx.wait_for_signal("tick") == "end":
            ctx.close_stream("t")
            return "done"
        ctx.write_stream("t", ctx.system_now().timestamp())


async def serve(path: str) -> None:
    """Serve until SIGTERM."""
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(waits_for_go)
        rt.register_workflow(streamer)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        print("serving", flush=True)
        await rt.serve(stop)


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))
