"""The workflows the HTTP API tests drive: a greeting, a box with a query and an update, steps to reset."""

from __future__ import annotations

from typing import Any

from harvest_engine import Rate, Runtime, WorkflowContext, activity, workflow


@workflow
async def greet(ctx: WorkflowContext, name: str) -> str:
    return f"hello {name}"


@workflow
async def box(ctx: WorkflowContext, first: Any) -> Any:
    items: list[Any] = [] if first is None else [first]

    def peek() -> Any:
        return {"items": items}

    async def put(item: str) -> int:
        items.append(item)
        return len(items)

    def check(item: str) -> None:
        if not item:
            raise ValueError("an empty item")

    ctx.register_query("peek", peek)
    ctx.register_update_handler("put", check, put)
    while True:
        got = await ctx.wait_for_signal("add")
        if got is None:
            return items
        items.append(got)


@workflow
async def reporter(ctx: WorkflowContext, _: Any = None) -> int:
    written = 0
    while True:
        n = await ctx.wait_for_signal("emit")
        if n is None:
            ctx.close_stream("progress")
            return written
        ctx.set_event("phase", "writing")
        for _ in range(n):
            ctx.write_stream("progress", {"step": written})
            written += 1


@activity
async def tick(ctx: Any, name: str) -> str:
    return name


@workflow
async def ticks(ctx: WorkflowContext, _: Any = None) -> list[Any]:
    first = await ctx.execute_activity(tick, "one")
    second = await ctx.execute_activity(tick, "two")
    got = await ctx.wait_for_signal("go")
    return [first, second, got]


@workflow(quota=Rate(1, "1h"))
async def metered(ctx: WorkflowContext, _: Any = None) -> str:
    return "ok"


@workflow(debounce="1h")
async def settle(ctx: WorkflowContext, value: Any = None) -> Any:
    return value


def register(rt: Runtime) -> Runtime:
    for fn in (greet, box, reporter, ticks, metered, settle):
        rt.register_workflow(fn)
    rt.register_activity(tick)
    return rt
