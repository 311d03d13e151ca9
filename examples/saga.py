"""A booking saga: book a flight, a hotel and a car; a cancel runs the compensations.

The body books each leg, then waits for the customer's confirmation. A cancel
request replays the body with `ctx.cancellation_reason()` set, so the check
after the last booking sees it and undoes every leg, newest first, before the
run ends CANCELLED.

    python examples/saga.py
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

LEGS = ("flight", "hotel", "car")


@activity
async def book(ctx: ActivityContext, leg: dict) -> str:
    """Book one leg; the reference doubles as the idempotency key at the supplier."""
    return f"{leg['kind']}-{leg['trip']}"


@activity
async def unbook(ctx: ActivityContext, reference: str) -> str:
    """Undo one booking (the compensation)."""
    return f"released {reference}"


@workflow
async def book_trip(ctx: WorkflowContext, trip: dict) -> dict:
    """Book every leg; on a cancel, undo them in reverse order."""
    references = []
    for kind in LEGS:
        references.append(
            await ctx.execute_activity(book, {"kind": kind, "trip": trip["id"]})
        )
    # Checked after the last await that records history, before the wait.
    if ctx.is_cancelled():
        released = [
            await ctx.execute_activity(unbook, ref) for ref in reversed(references)
        ]
        return {"trip": trip["id"], "released": released}
    confirmation = await ctx.wait_for_signal("confirm")
    return {"trip": trip["id"], "booked": references, "confirmation": confirmation}


async def main() -> int:
    """Confirm one trip, cancel another, and show the compensations."""
    with SqliteRuntime.open_in_memory() as rt:
        rt.register_workflow(book_trip)
        rt.register_activity(book)
        rt.register_activity(unbook)

        kept = rt.start_workflow("book_trip", {"id": "T1"})
        dropped = rt.start_workflow("book_trip", {"id": "T2"})
        print(f"T1: {await rt.run_until_blocked(kept)}")
        print(f"T2: {await rt.run_until_blocked(dropped)}")

        rt.send_signal(kept, "confirm", "ok by mail")
        print(f"T1 confirmed: {await rt.run_until_blocked(kept)}")

        rt.cancel(dropped, "customer changed plans")
        state = await rt.run_until_blocked(dropped)
        print(f"T2 cancelled: {state}")
        compensations = [
            e.attrs["input"]
            for e in rt.load_history(dropped)
            if e.type == "ActivityScheduled" and e.attrs["name"] == "unbook"
        ]
        print(f"compensations, newest first: {', '.join(compensations)}")
        print(f"last event: {rt.load_history(dropped)[-1].type}")
        ok = isinstance(state, RunState.Cancelled) and compensations == [
            "car-T2",
            "hotel-T2",
            "flight-T2",
        ]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
