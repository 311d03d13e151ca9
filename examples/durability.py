"""Durability: a run resumes by replay after its runtime is dropped.

Session 1 opens a file, starts an order, and drives it until it blocks on
the "approve" signal; then the runtime is dropped. Session 2 reopens the same
file, registers the same code again, delivers the signal and drives the run
to its end. Counters of the activity bodies show that the run resumed
rather than restarted: reserve ran once (in session 1; session 2 replayed its
recorded result) and ship ran once (in session 2 only).

    python examples/durability.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from harvest_engine import (
    ActivityContext,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)

# Which session each activity body ran in (the bodies' side effects).
session = 0
ran_in: dict[str, list[int]] = {"reserve": [], "ship": []}


@activity
def reserve(ctx: ActivityContext, order: dict) -> str:
    """Reserve stock; counts its runs."""
    ran_in["reserve"].append(session)
    return f"reserved {order['qty']}x {order['item']}"


@activity
def ship(ctx: ActivityContext, order: dict) -> str:
    """Ship the order; counts its runs."""
    ran_in["ship"].append(session)
    return f"shipped {order['id']}"


@workflow
async def fulfil_order(ctx: WorkflowContext, order: dict) -> str:
    """Reserve, wait for a human approval, ship."""
    reservation = await ctx.execute_activity(reserve, order)
    approver = await ctx.wait_for_signal("approve")
    shipment = await ctx.execute_activity(ship, order)
    return f"{reservation}; approved by {approver}; {shipment}"


def open_runtime(path: Path) -> SqliteRuntime:
    """Open the file and register the code (registrations live in memory)."""
    rt = SqliteRuntime.open(path)
    rt.register_workflow(fulfil_order)
    rt.register_activity(reserve)
    rt.register_activity(ship)
    return rt


async def main(path: Path) -> int:
    """Two sessions on one file; 0 when the counters prove resume-not-restart."""
    global session

    session = 1
    rt = open_runtime(path)
    exec_id = rt.start_workflow(
        "fulfil_order", {"id": "ORD-7", "item": "lamp", "qty": 2}
    )
    state = await rt.run_until_blocked(exec_id)
    print(f"session 1: started {exec_id}; drive returned {state}")
    rt.close()
    print("session 1: runtime dropped")

    session = 2
    with open_runtime(path) as rt:
        print(f"session 2: reopened {path.name}; run is {rt.outcome(exec_id)}")
        rt.send_signal(exec_id, "approve", "dana")
        state = await rt.run_until_blocked(exec_id)
        print(f"session 2: signal delivered; drive returned {state}")
        history = [event.type for event in rt.load_history(exec_id)]

    print(
        f"reserve ran {len(ran_in['reserve'])} time(s), in session(s) {ran_in['reserve']}"
    )
    print(f"ship ran {len(ran_in['ship'])} time(s), in session(s) {ran_in['ship']}")
    print(f"history: {', '.join(history)}")
    resumed = (
        isinstance(state, RunState.Completed)
        and ran_in == {"reserve": [1], "ship": [2]}
        and history.count("ActivityCompleted") == 2
    )
    if resumed:
        print("proved: the run resumed by replay; no completed step ran again")
        return 0
    print("NOT proved: the run restarted or did not finish", file=sys.stderr)
    return 1


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="harvest-durability-") as folder:
        sys.exit(asyncio.run(main(Path(folder) / "orders.db")))
