"""One serving worker of three on a Postgres database, for the queue tests.

    pg_queue_worker.py DSN WORKER_ID [--lease SECONDS]

Registers the queue "pool" (concurrency 2, one run per worker) and `pooled`, a workflow whose
one activity records its body's start and end (by the database's clock) in
`test_intervals`, then serves until a `harvest_test_stop` table
exists. Prints ``ready`` once connected.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time

import psycopg

from harvest_engine import (
    ActivityContext,
    PostgresRuntime,
    Queue,
    WorkflowContext,
    activity,
)
from harvest_engine import workflow as workflow_decorator

# One run per worker: the two slots are always two workers' (a worker whose
# run ends admits the next itself, in the same commit, so without it one
# worker that started first could hold both slots for the whole test).
POOL = Queue("pool", concurrency=2, worker_concurrency=1)
BODY_SECONDS = 0.2
DSN = sys.argv[1] if len(sys.argv) > 1 else ""
WORKER = sys.argv[2] if len(sys.argv) > 2 else "test"


@activity
def timed_body(ctx: ActivityContext, n: int) -> int:
    """Record when this body starts and ends; work for BODY_SECONDS between."""
    with psycopg.connect(DSN, autocommit=True) as conn:
        row = conn.execute(
            "INSERT INTO test_intervals (exec_id, worker, started) "
            "VALUES (%s, %s, clock_timestamp()) RETURNING id",
            (ctx.info().exec_id, WORKER),
        ).fetchone()
        time.sleep(BODY_SECONDS)
        conn.execute(
            "UPDATE test_intervals SET ended = clock_timestamp() WHERE id = %s",
            (row[0] if row else None,),
        )
    return n


@workflow_decorator
async def pooled(ctx: WorkflowContext, n: int) -> int:
    """One timed activity."""
    return await ctx.execute_activity(timed_body, n)


def stop_table_exists() -> bool:
    """Whether the test asked the workers to stop."""
    with psycopg.connect(DSN, autocommit=True) as conn:
        row = conn.execute("SELECT to_regclass('harvest_test_stop')").fetchone()
    return row is not None and row[0] is not None


async def serve_until_told(rt: PostgresRuntime) -> None:
    """Serve until the test creates the stop table."""
    stop = asyncio.Event()
    server = asyncio.create_task(rt.serve(stop, poll_interval="20ms", grace="1s"))
    while True:  # the test creates the table from another process
        if stop_table_exists():
            break
        await asyncio.sleep(0.05)
    stop.set()
    await server


def main() -> None:
    """Connect, register, announce, serve."""
    logging.disable(logging.CRITICAL)
    lease = sys.argv[sys.argv.index("--lease") + 1] if "--lease" in sys.argv else None
    rt = PostgresRuntime.connect(DSN, worker_id=WORKER, lease=lease)
    rt.register_queue(POOL)
    rt.register_workflow(pooled)
    rt.register_activity(timed_body)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    try:
        asyncio.run(serve_until_told(rt))
    finally:
        rt.close()


if __name__ == "__main__":
    main()
