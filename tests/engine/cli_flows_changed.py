"""`report` as a later version of the code would write it: a different first command."""

from __future__ import annotations

from harvest_engine import WorkflowContext, workflow


@workflow
async def report(ctx: WorkflowContext, text: str) -> str:
    await ctx.sleep(5)
    return text
