"""Workflows for the history-tool tests: two versions of one workflow, to make a divergence."""

from __future__ import annotations

from typing import Any

from harvest_engine import ActivityContext, WorkflowContext, activity, workflow


@activity
async def step(ctx: ActivityContext, n: Any) -> Any:
    """Doubles its input."""
    return n * 2


@workflow(name="steps")
async def steps_v1(ctx: WorkflowContext, n: int) -> Any:
    """Two steps, a signal, a third step."""
    a = await ctx.execute_activity(step, n)
    b = await ctx.execute_activity(step, a)
    go = await ctx.wait_for_signal("go")
    return [a, b, go, await ctx.execute_activity(step, b)]


@workflow(name="steps")
async def steps_v2(ctx: WorkflowContext, n: int) -> Any:
    """Changed code: a timer where the second step was."""
    a = await ctx.execute_activity(step, n)
    await ctx.sleep(1)
    return a


def make_steps_file(path: Any, *, register_v2: bool = False) -> list[str]:
    """Runs of `steps`: 1 and 2 done (go=a / go=b), 3 waiting for go; their exec ids."""
    import asyncio

    from harvest_engine import SqliteRuntime

    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(steps_v1)
        rt.register_activity(step)
        ids = [str(rt.start_workflow("steps", n)) for n in (1, 1, 5)]
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_idle())
            rt.send_signal(ids[0], "go", "a")
            rt.send_signal(ids[1], "go", "b")
            loop.run_until_complete(rt.run_until_idle())
        finally:
            loop.close()
    return ids


def register_v1(rt: Any) -> None:
    """The --app hook for today's code."""
    rt.register_workflow(steps_v1)
    rt.register_activity(step)


def register_v2(rt: Any) -> None:
    """The --app hook for changed code (replay diverges)."""
    rt.register_workflow(steps_v2)
    rt.register_activity(step)
