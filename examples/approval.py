"""Approval: an order waits for an approval signal with a deadline.

The order reserves stock, then waits up to a day for an "approve" signal. It
exposes its stage and price as queries and accepts a price change while it
waits:

- `rt.query(order, "stage")` reads the stage; it replays the run in memory
  and writes nothing.
- `rt.update(order, "reprice", 120)` validates the new price (positive, and
  only before the approval) and returns a quote. An update computes a result
  from the workflow's state but does not change it, so the
  accepted price then travels to the run as a keyed signal: a retried request
  applies it once.
- The approval comes from a webhook that fires twice; its idempotency key
  makes the run see it once, so the card is charged once.

A second order gets no approval: a drive a day later finds the deadline
passed and the order is released.

    python examples/approval.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harvest_engine import (
    ActivityContext,
    RunState,
    SqliteRuntime,
    UpdateRejected,
    WorkflowContext,
    activity,
    workflow,
)

charges: list[str] = []  # the side effect the webhook must not repeat


@dataclass
class Order:
    """What the shop sends when an order is placed."""

    id: str
    item: str
    price: int


@activity
def reserve(ctx: ActivityContext, order: Order) -> str:
    """Hold the stock for the order."""
    return f"reserved {order.item} for {order.id}"


@activity
def charge(ctx: ActivityContext, amount: int) -> str:
    """Charge the card; records the idempotency key, which names this call (the same on every attempt)."""
    charges.append(ctx.idempotency_key())
    return f"charged {amount}"


@activity
def release(ctx: ActivityContext, order_id: str) -> str:
    """Give the stock back."""
    return f"released {order_id}"


@workflow
async def approval(ctx: WorkflowContext, order: Order) -> dict[str, Any]:
    """Reserve, wait a day for approval (price changes allowed meanwhile), then charge."""
    state: dict[str, Any] = {"stage": "reserving", "price": order.price}
    ctx.register_query("stage", lambda: state["stage"])
    ctx.register_query("price", lambda: state["price"])

    def check_price(new_price: int) -> None:
        if new_price <= 0:
            raise ValueError("a price must be positive")
        if state["stage"] != "awaiting approval":
            raise ValueError(f"the price is fixed once the order is {state['stage']}")

    async def reprice(new_price: int) -> dict[str, Any]:
        return {"order": order.id, "old": state["price"], "new": new_price}

    ctx.register_update_handler("reprice", check_price, reprice)
    ctx.register_signal_handler("price", lambda quote: state.update(price=quote["new"]))

    await ctx.execute_activity(reserve, order)
    state["stage"] = "awaiting approval"
    approved = await ctx.wait_for_signal_timeout("approve", "1d")
    if approved is None:
        state["stage"] = "released"
        await ctx.execute_activity(release, order.id)
        return {"order": order.id, "status": "no approval within a day"}
    state["stage"] = "approved"
    receipt = await ctx.execute_activity(charge, state["price"])
    state["stage"] = "charged"
    return {"order": order.id, "status": receipt, "approved_by": approved}


def open_runtime(path: Path) -> SqliteRuntime:
    """Open the file and register this example's code (again after every reopen)."""
    rt = SqliteRuntime.open(path)
    rt.register_workflow(approval)
    for fn in (reserve, charge, release):
        rt.register_activity(fn)
    return rt


async def main(folder: Path) -> None:
    """Run both orders against a file in `folder`."""
    with open_runtime(folder / "approval.db") as rt:
        order = rt.start_workflow_with_id(
            "approval", "ORD-7", Order("ORD-7", "lamp", 100)
        )
        print(f"drive: {await rt.run_until_blocked(order)}")
        print(f"stage: {await rt.query(order, 'stage')}")

        quote = await rt.update(order, "reprice", 120)
        print(f"quote: {quote}")
        try:
            await rt.update(order, "reprice", -5)
        except UpdateRejected as rejected:
            print(f"rejected: {rejected.reason}")
        rt.send_signal_idempotent(order, "price", quote, "reprice-1")
        rt.send_signal_idempotent(
            order, "price", quote, "reprice-1"
        )  # a retried request
        await rt.run_until_blocked(order)
        print(f"price: {await rt.query(order, 'price')}")

    # Reopen, as a new process would: the same file, the same code, the run resumes.
    with open_runtime(folder / "approval.db") as rt:
        for _ in range(2):  # the approval webhook fires twice
            rt.send_signal_idempotent(order, "approve", "alice", "webhook-991")
        print(f"drive: {await rt.run_until_blocked(order)}")
        print(f"stage: {await rt.query(order, 'stage')}")
        print(f"charged {len(charges)} time(s)")

        late = rt.start_workflow_with_id(
            "approval", "ORD-8", Order("ORD-8", "desk", 300)
        )
        print(f"second order: {await rt.run_until_blocked(late)}")
        a_day_later = datetime.now(UTC) + timedelta(days=1, minutes=1)
        state = await rt.run_until_blocked_as_of(late, a_day_later)
        assert isinstance(state, RunState.Completed)
        print(f"a day later: {state.output['status']}")
        print(f"stage: {await rt.query(late, 'stage')}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        asyncio.run(main(Path(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(Path(tmp)))
