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
