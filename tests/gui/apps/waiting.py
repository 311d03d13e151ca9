"""--app module: runs blocked on a typed signal, a timer, a child, a condition, and one that panics."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harvest_engine import WorkflowContext, workflow


@dataclass
class Approval:
    """Who approved."""

    by: str


@workflow
async def approval(ctx: WorkflowContext, order: str) -> str:
    """Waits for a typed "approve" signal, with a one-hour deadline."""
    decision = await ctx.receive_signal_timeout("approve", "1h", Approval)
    return "expired" if decision is None else str(decision.by)


@workflow
async def child(ctx: WorkflowContext) -> Any:
    """Waits for "done"."""
    return await ctx.wait_for_signal("done")


@workflow
async def parent(ctx: WorkflowContext) -> Any:
    """Waits for its child."""
    return await ctx.spawn_child_workflow(child)


@workflow
async def panics(ctx: WorkflowContext) -> Any:
    """A bug: divides by zero on its first line."""
    return 1 // 0


WORKFLOWS = [approval, child, parent, panics]
