"""Quickstart: an order workflow with two activities, in memory.

Open an in-memory runtime, register a workflow and two activities, start a
run, drive everything with run_until_idle, and print the terminal outcome.

    python examples/quickstart.py
"""

from __future__ import annotations

import asyncio
import sys

from harvest_engine import (
    ActivityContext,
    ExecutionOutcome,
    RetryPolicy,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)


@activity(
    retry=RetryPolicy(max_attempts=3, initial_interval="100ms"), start_to_close="10s"
)
async def reserve_inventory(ctx: ActivityContext, order: dict) -> str:
    """Reserve the goods; the idempotency key is stable across retries and re-runs."""
    return f"reserved {order['qty']}x {order['item']} (key {ctx.idempotency_key()})"


@activity
def charge_card(ctx: ActivityContext, order: dict) -> str:
    """Charge the customer (a sync body: it runs off the event loop thread)."""
    return f"charged {order['qty'] * order['unit_price']:.2f} EUR"


@workflow
async def process_order(ctx: WorkflowContext, order: dict) -> str:
    """Reserve, then charge; the result says what happened."""
    reservation = await ctx.execute_activity(reserve_inventory, order)
    payment = await ctx.execute_activity(charge_card, order)
    return f"order {order['id']} confirmed: {reservation}; {payment}"


async def main() -> int:
    """Run one order to its end and print the outcome."""
    with SqliteRuntime.open_in_memory() as rt:
        rt.register_workflow(process_order)
        rt.register_activity(reserve_inventory)
        rt.register_activity(charge_card)
        order = {"id": "ORD-1", "item": "widget", "qty": 3, "unit_price": 4.5}
        exec_id = rt.start_workflow("process_order", order)
        print(f"started run {exec_id}")

        await rt.run_until_idle()

        outcome = rt.outcome(exec_id)
        print(f"outcome: {outcome}")
        match outcome:
            case ExecutionOutcome.Completed(output=output):
                print(f"completed: {output}")
                events = [event.type for event in rt.load_history(exec_id)]
                print(f"history: {len(events)} events: {', '.join(events)}")
                return 0
            case _:
                print("the run did not complete", file=sys.stderr)
                return 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
