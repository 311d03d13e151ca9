"""A serving Postgres worker for the fault tests: a lost connection, a restarted server.

    pg_fault_worker.py DSN WORKER_ID LOG [--lease SECONDS] [--step-delay SECONDS] [--gates DIR]

Registers `three_steps` (three activities in a row) and serves until a
`harvest_test_stop` table exists, logging warnings and errors to LOG (the
test reads it; a pipe left unread would block the worker). Prints ``ready``
once connected. With ``--gates DIR`` the first decision of a run and the
first activity body each stop at a gate: they write ``deciding`` /
``running`` into DIR and block (the decision inside its transaction, the
event loop stopped) until the test creates ``decide.go`` / ``run.go``; every
decision and body call appends a line to ``decisions`` / ``bodies``, so
the test counts how often each ran.
"""

from __future__ import annotations

import asyncio
import logging
import select
import sys
import time
from pathlib import Path

import psycopg

from harvest_engine import ActivityContext, PostgresRuntime, WorkflowContext, activity
from harvest_engine import workflow as workflow_decorator


def option(name: str) -> str | None:
    """The value after `name` on the command line, if given."""
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


STEP_DELAY = float(option("--step-delay") or 0)
GATES = Path(option("--gates")) if option("--gates") else None


def note(name: str, line: str) -> None:
    """Append a line to a file in the gate folder."""
    assert GATES is not None
    with (GATES / name).open("a") as out:
        out.write(line + "\n")


def gate(marker: str, go: str) -> None:
    """Announce `marker`, then block until the test creates `go` (only the first time)."""
    assert GATES is not None
    if (GATES / marker).exists():
        return
    (GATES / marker).write_text("here")
    while not (GATES / go).exists():
        # select, not time.sleep: the engine refuses time.sleep in workflow code.
        select.select([], [], [], 0.01)


@activity
def step(ctx: ActivityContext, n: int) -> int:
    """One step of work (slowed by --step-delay; the first one gated by --gates)."""
    if GATES is not None:
        note("bodies", f"{ctx.info().activity_id} {n}")
        gate("running", "run.go")
    if STEP_DELAY:
        time.sleep(STEP_DELAY)
    return n + 1


@workflow_decorator
async def three_steps(ctx: WorkflowContext, n: int) -> int:
    """Three activities in a row; the first decision gated by --gates."""
    if GATES is not None:
        # Blocks the worker's loop inside the decision's transaction: the
        # test ends the connection under it. Timing only; the output is the same.
        note("decisions", str(n))
        gate("deciding", "decide.go")
    for _ in range(3):
        n = await ctx.execute_activity(step, n)
    return n


def stop_table_exists(dsn: str) -> bool:
    """Whether the test asked the workers to stop (False while the server is away)."""
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
            row = conn.execute("SELECT to_regclass('harvest_test_stop')").fetchone()
    except psycopg.OperationalError:
        return False
    return row is not None and row[0] is not None


async def serve_until_told(rt: PostgresRuntime, dsn: str) -> None:
    """Serve until the test creates the stop table."""
    stop = asyncio.Event()
    server = asyncio.create_task(rt.serve(stop, poll_interval="50ms", grace="1s"))
    while not server.done():
        if await asyncio.to_thread(stop_table_exists, dsn):
            break
        await asyncio.sleep(0.1)
    stop.set()
    await server


def main() -> None:
    """Connect, announce, serve."""
    dsn, worker_id, log_path = sys.argv[1], sys.argv[2], sys.argv[3]
    logging.basicConfig(
        filename=log_path,
        level=logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    rt = PostgresRuntime.connect(dsn, worker_id=worker_id, lease=option("--lease"))
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
