"""A serving Postgres worker whose bodies record when a cancel from another process reaches them.

    pg_cancel_worker.py DSN WORKER_ID FOLDER

Registers `one_body(kind)`: a sync body that checks `is_cancelled()` and
heartbeats every 5 ms, or an async one parked on a long sleep. Each writes
``FOLDER/<kind>.started`` when it starts and ``FOLDER/<kind>.stopped``
(the wall time it learnt of the cancel) when it stops. Serves until a
`harvest_test_stop` table exists. Prints ``ready`` once connected.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path
from typing import Any

from harvest_engine import (
    ActivityCancelled,
    ActivityContext,
    PostgresRuntime,
    WorkflowContext,
    activity,
)
from harvest_engine import workflow as workflow_decorator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pg_worker import serve_until_told  # noqa: E402

FOLDER = Path(sys.argv[3]) if len(sys.argv) > 3 else Path()


def mark(kind: str, what: str) -> None:
    """Write the wall time of `what` for body `kind` (renamed in place: read whole)."""
    tmp = FOLDER / f"{kind}.{what}.tmp"
    tmp.write_text(repr(time.time()))
    tmp.rename(FOLDER / f"{kind}.{what}")


@activity
def sync_body(ctx: ActivityContext, _: Any) -> str:
    """Works in 5 ms steps until cancelled."""
    mark("sync", "started")
    try:
        for i in range(60_000):
            if ctx.is_cancelled():
                raise ActivityCancelled("seen by is_cancelled")
            ctx.heartbeat(i)
            time.sleep(0.005)
    except ActivityCancelled:
        mark("sync", "stopped")
        raise
    return "done"


@activity
async def async_body(ctx: ActivityContext, _: Any) -> str:
    """Parks on a long sleep until cancelled."""
    mark("async", "started")
    try:
        await asyncio.sleep(300)
    except asyncio.CancelledError:
        mark("async", "stopped")
        raise
    return "done"


@workflow_decorator
async def one_body(ctx: WorkflowContext, kind: str) -> str:
    """Runs the body of `kind`."""
    body = sync_body if kind == "sync" else async_body
    return str(await ctx.execute_activity(body, None))


def main() -> None:
    """Connect, announce, serve."""
    logging.disable(logging.CRITICAL)
    dsn, worker_id = sys.argv[1], sys.argv[2]
    rt = PostgresRuntime.connect(dsn, worker_id=worker_id)
    rt.register_workflow(one_body)
    rt.register_activity(sync_body)
    rt.register_activity(async_body)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    try:
        asyncio.run(serve_until_told(rt, dsn))
    finally:
        rt.close()


if __name__ == "__main__":
    main()
