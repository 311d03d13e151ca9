"""The serving process of test_progress_restart.py: serves a file until killed (not a test).

progress_child.py DB|DSN   serve a file or a Postgres database with the `chatter`
workflow; print "serving" when ready
"""

from __future__ import annotations

import asyncio
import sys

from harvest_engine import PostgresRuntime, SqliteRuntime, WorkflowContext, workflow


@workflow
async def chatter(ctx: WorkflowContext, per_signal: int) -> str:
    """Write `per_signal` values to stream "out" per "more" signal; close on "end"."""
    written = 0
    ctx.set_event("ready", True)
    while True:
        word = await ctx.wait_for_signal("more")
        if word == "end":
            ctx.close_stream("out")
            return "closed"
        for _ in range(per_signal):
            ctx.write_stream("out", written)
            written += 1


async def serve(path: str) -> None:
    """Serve until killed."""
    opened = (
        PostgresRuntime.connect(path)
        if path.startswith("postgresql://")
        else SqliteRuntime.open(path)
    )
    with opened as rt:
        rt.register_workflow(chatter)
        server = asyncio.create_task(rt.serve(poll_interval="5ms"))
        print("serving", flush=True)
        await server


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))
