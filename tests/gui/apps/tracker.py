"""--app module: a workflow whose body query answers differently at each stage."""

from __future__ import annotations

from typing import Any

from harvest_engine import ActivityContext, WorkflowContext, activity, query, workflow


@activity
async def pack(ctx: ActivityContext, n: int) -> int:
    """Packs `n` boxes."""
    return n


@workflow
async def tracker(ctx: WorkflowContext, n: int) -> str:
    """Packs, then waits for "go"; the "stage" query says where it is, "boxes" adds an offset."""
    stage = {"at": "started", "boxes": 0}
    ctx.register_query("stage", lambda: stage["at"])
    await ctx.execute_activity(pack, n)
    stage.update(at="packed", boxes=n)

    def boxes(extra: Any) -> Any:
        if extra == "boom":
            raise ValueError("no such box")
        return stage["boxes"] + int(extra or 0)

    ctx.register_query("boxes", boxes)
    go = await ctx.wait_for_signal("go")
    stage["at"] = f"shipped {go}"
    return str(stage["at"])


@query(workflow="tracker")
def clock(ctx: WorkflowContext, _: Any) -> str:
    """A declarative query: the run's workflow time (the last event the code has seen)."""
    return ctx.now().isoformat()


def register(rt: Any) -> None:
    """The --app hook."""
    rt.register_workflow(tracker)
    rt.register_activity(pack)
    rt.register_query(clock)
