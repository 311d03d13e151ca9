"""One serving worker of many on a Postgres database, for the multi-worker tests.

    pg_worker.py DSN WORKER_ID [--hang] [--lease SECONDS]

Registers `three_steps` (three activities in a row) and serves until a
`harvest_test_stop` table exists in the database. With ``--hang`` the `step`
body never returns (the test kills this worker mid-activity). Prints
``ready`` once connected.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time

import psycopg

from harvest_engine import ActivityContext, PostgresRuntime, WorkflowContext, activity
from harvest_engine import workflow as workflow_decorator

HANG = "--hang" in sys.argv


@activity
def step(ctx: ActivityContext, n: int) -> int:
    """One step of work; hangs forever in a worker started with --hang."""
    while HANG:
        time.sleep(3600)
    return n + 1


@workflow_decorator
async def three_steps(ctx: WorkflowContext, n: int) -> int:
    """Three activities in a row."""
    for _ in range(3):
        n = await ctx.execute_activity(step, n)
    return n


def stop_table_exists(dsn: str) -> bool:
    """Whether the test asked the workers to stop (False while the server is away)."""
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("SELECT to_regclass('harvest_test_stop')").fetchone()
    except psycopg.OperationalError:
        return False
    return row is not None and row[0] is not None


async def serve_until_told(rt: PostgresRuntime, dsn: str) -> None:
    """Serve until the test creates the stop table."""
    stop = asyncio.Event()
    server = asyncio.create_task(rt.serve(stop, poll_interval="20ms", grace="1s"))
    while True:  # the test creates the table from another process
        if stop_table_exists(dsn):
            break
        await asyncio.sleep(0.05)
    stop.set()
    await server


def main() -> None:
    """Connect, announce, serve.

    The test reads this worker's output only at its end, so its log goes to
    nowhere: a pipe left unread would fill up and block the worker.
    """
    logging.disable(logging.CRITICAL)
    dsn, worker_id = sys.argv[1], sys.argv[2]
    lease = sys.argv[sys.argv.index("--lease") + 1] if "--lease" in sys.argv else None
    rt = PostgresRuntime.connect(dsn, worker_id=worker_id, lease=lease)
    rt.register_workflow(three_steps)
    rt.register_activity(step)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    try:
        asyncio.run(serve_until_told(rt, dsn))
    finally:
        rt.close()


if __name__ == "__main__":
    main()
