"""A Postgres serving worker whose runs signal each other in a loop, for the lock-order test.

    pg_pingpong_worker.py DSN WORKER_ID

Registers `ping_pong` (send the peer a ping, wait for the peer's, ROUNDS
times) and serves until a `harvest_test_stop` table exists. Logs the
``harvest_engine`` logger at DEBUG to stderr, so the test can count the
rounds a deadlock failed and the decisions that stood back for a held run.
Prints ``ready`` once connected.
"""

from __future__ import annotations

import asyncio
import logging
import sys

import psycopg

from harvest_engine import PostgresRuntime, WorkflowContext, workflow


@workflow
async def ping_pong(ctx: WorkflowContext, rounds: int) -> int:
    """Learn the peer, then ping it and await its ping, `rounds` times."""
    peer = await ctx.wait_for_signal("peer")
    for n in range(rounds):
        await ctx.signal_external_workflow(peer, "ping", n)
        await ctx.wait_for_signal("ping")
    return rounds


def stop_table_exists(dsn: str) -> bool:
    """Whether the test asked the workers to stop."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT to_regclass('harvest_test_stop')").fetchone()
    return row is not None and row[0] is not None


async def serve_until_told(rt: PostgresRuntime, dsn: str) -> None:
    """Serve until the test creates the stop table."""
    stop = asyncio.Event()
    server = asyncio.create_task(rt.serve(stop, poll_interval="5ms", grace="1s"))
    while True:  # the test creates the table from another process
        if stop_table_exists(dsn):
            break
        await asyncio.sleep(0.05)
    stop.set()
    await server


def main() -> None:
    """Connect, announce, serve; the log goes to stderr."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(name)s %(message)s"
    )
    logging.getLogger("harvest_engine").setLevel(logging.DEBUG)
    dsn, worker_id = sys.argv[1], sys.argv[2]
    rt = PostgresRuntime.connect(dsn, worker_id=worker_id)
    # A few runs per transaction: each worker decides its own runs (the first
    # to list them would otherwise take every one), so the two meet often.
    rt.settings.group_commit_size = 2
    rt.register_workflow(ping_pong)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    try:
        asyncio.run(serve_until_told(rt, dsn))
    finally:
        rt.close()


if __name__ == "__main__":
    main()
