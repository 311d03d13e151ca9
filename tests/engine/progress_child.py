"""The serving process of test_progress_restart.py: serves a file until killed (not a test).

progress_child.py DB|DSN   serve a file or a Postgres database with the `chatter`
workflow; print "serving" when ready
"""

from __future__ import annotations

import asyncio
import sys

from harvest_engine import PostgresRuntime, SqliteRuntime, WorkflowContext, workflow
from harvest_engine.store.sqlite.wake_channel import SERVER_NAME, wake_dir


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
        await _listening(path)
        print("serving", flush=True)
        await server


async def _listening(path: str) -> None:
    """Return once a client's first datagram is heard (the file's wake channel is bound).

    A client told nothing at its first command polls instead: at the tests'
    minute-long polls (test_wake_channel) that was a hang under load.
    """
    folder = None if path.startswith("postgresql://") else wake_dir(path)
    for _ in range(1000):
        await asyncio.sleep(0.005)
        if folder is None or (folder / SERVER_NAME).exists():
            return


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))
