"""Workflows the serving e2e tests run: a chat-like session, a greeter, a slow step."""

from __future__ import annotations

from typing import Any

from harvest_engine import SqliteRuntime, WorkflowContext, workflow


@workflow
async def session(ctx: WorkflowContext, owner: str) -> Any:
    """Collect "say" signals until "bye"; answers query "lines" and update "label"."""
    lines: list[str] = []

    def current() -> Any:
        return {"owner": owner, "lines": lines}

    async def label(text: str) -> str:
        return f"{owner}: {text}"

    def check(text: str) -> None:
        if not text:
            raise ValueError("a label is non-empty text")

    ctx.register_query("lines", current)
    ctx.register_update_handler("label", check, label)
    while True:
        said = await ctx.wait_for_signal("say")
        if said == "bye":
            return lines
        lines.append(str(said))


@workflow
async def greet(ctx: WorkflowContext, value: Any) -> Any:
    """Complete at once with what it was given."""
    return {"greeted": value}


@workflow
async def nap(ctx: WorkflowContext, seconds: float) -> str:
    """Sleep on a durable timer."""
    await ctx.sleep(seconds)
    return "rested"


def register(rt: SqliteRuntime) -> None:
    """Register every flow of this module."""
    for flow in (session, greet, nap):
        rt.register_workflow(flow)
