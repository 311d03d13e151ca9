"""Idle cost of waiters: serve() with 20 runs on a held mutex, 20 parents on their children, 20 watchers.

``python -m bench.idle_waits``: the CPU time and the serving passes of 3 s of
waiting (nothing can move until a signal). A loop that re-decides such
waiters each poll tick spends its passes on them; one woken by the release,
the child's end or the watched run's seal spends none. The watchers await
(`await_external_workflow`) one run that is not their child.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from harvest_engine import SqliteRuntime, WorkflowContext, workflow

WAITERS = 20
IDLE_SECONDS = 3.0


@workflow
async def holds_key(ctx: WorkflowContext, key: str) -> None:
    async with ctx.mutex(key):
        await ctx.wait_for_signal("go")


@workflow
async def child_waits(ctx: WorkflowContext, value: Any) -> None:
    await ctx.wait_for_signal("go")


@workflow
async def parent_waits(ctx: WorkflowContext, value: Any) -> Any:
    return await ctx.spawn_child_workflow(child_waits, value)


@workflow
async def watcher(ctx: WorkflowContext, exec_id: str) -> Any:
    return await ctx.await_external_workflow(exec_id)


async def idle_cost() -> tuple[float, int]:
    """(CPU seconds, passes) of IDLE_SECONDS of serving the waiting runs."""
    with (
        tempfile.TemporaryDirectory() as folder,
        SqliteRuntime.open(Path(folder) / "idle.db") as rt,
    ):
        for fn in (holds_key, child_waits, parent_waits, watcher):
            rt.register_workflow(fn)
        for _ in range(WAITERS + 1):  # one holds the key, the rest wait for it
            rt.start_workflow("holds_key", "k")
        for n in range(WAITERS):
            rt.start_workflow("parent_waits", n)
        watched = rt.start_workflow("child_waits", None)
        for _ in range(WAITERS):
            rt.start_workflow("watcher", str(watched))
        await rt.run_until_idle()
        passes = 0
        real_pass = rt._driver.one_pass

        async def counted(now: Any) -> Any:
            nonlocal passes
            passes += 1
            return await real_pass(now)

        rt._driver.one_pass = counted  # type: ignore[method-assign]
        stop = asyncio.Event()
        server = asyncio.create_task(rt.serve(stop))
        await asyncio.sleep(0.5)  # settled
        cpu, before = time.process_time(), passes
        await asyncio.sleep(IDLE_SECONDS)
        used, made = time.process_time() - cpu, passes - before
        stop.set()
        await server
    return used, made


def main() -> None:
    used, made = asyncio.run(idle_cost())
    print(
        f"{WAITERS} mutex waiters + {WAITERS} parents on children "
        f"+ {WAITERS} watchers of a run, "
        f"{IDLE_SECONDS:g} s idle: {used * 1000:.0f} ms CPU, {made} passes"
    )


if __name__ == "__main__":
    main()
