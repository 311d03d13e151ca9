"""Module-level workflows the CLI tests store and `harvest replay --module cli_flows` replays."""

from __future__ import annotations

from typing import Any

from harvest_engine import LlmCall, WorkflowContext, activity, workflow


@activity
def summarise(ctx: Any, text: str) -> str:
    return text.upper()


def summarise_with_cost(text: Any) -> tuple[str, list[LlmCall]]:
    return str(text).upper(), [LlmCall("test-model", 120, 30).with_latency(0.25)]


@workflow
async def report(ctx: WorkflowContext, text: str) -> str:
    ctx.log(f"summarising {text}")
    summary = await ctx.execute_activity(summarise, text)
    ctx.log("done")
    return summary


@workflow
async def approval(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("approve")
