"""Fan-out: a parent starts one child workflow per item and gathers their results.

Each child is a full run with its own history, whose parent is the caller.
`run_until_blocked(parent)` drives the children in the same call,
so a parent whose children need no outside input completes in one call.

    python examples/fan_out.py
"""

from __future__ import annotations

import asyncio
import sys

from harvest_engine import (
    ActivityContext,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)


@activity
async def count_words(ctx: ActivityContext, text: str) -> int:
    """The work of one child."""
    return len(text.split())


@workflow
async def count_document(ctx: WorkflowContext, text: str) -> dict:
    """A child: count one document's words."""
    words = await ctx.execute_activity(count_words, text)
    return {"words": words, "parent": ctx.info().parent_execution_id}


@workflow
async def count_library(ctx: WorkflowContext, documents: list[str]) -> dict:
    """The parent: one child per document, gathered in input order."""
    results = await asyncio.gather(
        *(ctx.spawn_child_workflow(count_document, doc) for doc in documents)
    )
    return {
        "per_document": [r["words"] for r in results],
        "total": sum(r["words"] for r in results),
    }


async def main() -> int:
    """Count a small library with one child per document."""
    documents = ["the quick brown fox", "jumps over", "the lazy dog tonight"]
    with SqliteRuntime.open_in_memory() as rt:
        rt.register_workflow(count_library)
        rt.register_workflow(count_document)
        rt.register_activity(count_words)

        parent = rt.start_workflow("count_library", documents)
        state = await rt.run_until_blocked(parent)
        print(f"parent: {state}")
        children = [
            e.attrs["child"]
            for e in rt.load_history(parent)
            if e.type == "ChildWorkflowStarted"
        ]
        for child in children:
            print(
                f"child {child}: parent {rt.parent_execution(child)}, {rt.outcome(child)}"
            )
        print(f"{len(children)} children, all gathered in one drive")
        ok = state == RunState.Completed(
            output={"per_document": [4, 2, 4], "total": 10}
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
