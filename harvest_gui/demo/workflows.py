"""Demo workflows: an order process (activities, a cooling-off timer, an approval signal, a shipping child)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from harvest_engine import (
    ActivityContext,
    ApplicationError,
    LlmCall,
    RetryPolicy,
    WorkflowContext,
    activity,
    query,
    update,
    workflow,
)

APPROVAL_LIMIT = 100.0
"""Orders above this total wait for an "approve" signal."""


@dataclass
class Approval:
    """The payload of the demo's "approve" signal (the signal form offers its fields)."""

    approved: bool = True
    by: str = "ops"
    note: str = ""


@dataclass
class Discount:
    """The argument of the demo's "apply_discount" update."""

    percent: float
    reason: str = ""


@activity(
    retry=RetryPolicy(max_attempts=3, initial_interval="200ms"), start_to_close="10s"
)
async def reserve_inventory(ctx: ActivityContext, order: dict[str, Any]) -> str:
    """Reserve the goods (takes a moment, like a real warehouse call)."""
    await asyncio.sleep(0.3)
    return f"reserved {order['qty']}x {order['item']}"


@activity(
    retry=RetryPolicy(
        max_attempts=4,
        initial_interval="500ms",
        backoff_coefficient=2.0,
        non_retryable_error_types=["CardDeclined"],
    ),
    start_to_close="10s",
)
async def charge_card(ctx: ActivityContext, order: dict[str, Any]) -> str:
    """Charge the customer; a "flaky" order fails its first attempt, a "declined" one for good."""
    await asyncio.sleep(0.2)
    if order.get("declined"):
        raise ApplicationError(
            "card declined by the bank", type="CardDeclined", non_retryable=True
        )
    if order.get("flaky") and ctx.info().attempt == 1:
        raise ApplicationError("payment gateway timed out", type="GatewayTimeout")
    total = order["qty"] * order["unit_price"]
    return f"charged {total:.2f} EUR"


@activity(start_to_close="30s")
async def write_confirmation(ctx: ActivityContext, order: dict[str, Any]) -> str:
    """Draft the confirmation e-mail with a (pretend) language model; the call lands in Costs."""
    await asyncio.sleep(0.2)
    words = 40 + 5 * int(order["qty"])
    ctx.record_llm_call(
        LlmCall("demo-writer-small", 180 + words, words).with_latency(0.2)
    )
    return f"Dear customer, your order {order['id']} is on its way."


@activity(start_to_close="10s")
async def ship_parcel(ctx: ActivityContext, order: dict[str, Any]) -> str:
    """Hand the parcel to the carrier."""
    await asyncio.sleep(0.25)
    return f"parcel for {order['id']} handed to the carrier"


@activity(start_to_close="10s")
async def compile_report(ctx: ActivityContext, _: Any) -> str:
    """Summarise the day (the scheduled demo run)."""
    await asyncio.sleep(0.1)
    return "report compiled"


@workflow
async def ship_order(ctx: WorkflowContext, order: dict[str, Any]) -> str:
    """The child workflow of every order: hand the parcel over, then wait for the pickup scan."""
    ctx.log(f"shipping {order['id']} for parent {ctx.info().parent_execution_id}")
    handed = await ctx.execute_activity(ship_parcel, order)
    await ctx.sleep(order.get("pickup", "1s"))
    return f"{handed}, picked up"


@workflow
async def process_order(ctx: WorkflowContext, order: dict[str, Any]) -> str:
    """Reserve, wait out the cooling-off period, get approval when large, charge, confirm, ship.

    Shipping is a child workflow (`ship_order`); the body's ``status`` query
    tells where the order stands, so time travel can ask it at any event.
    """
    status = {"stage": "received"}
    ctx.register_query("status", lambda: status["stage"])
    total = float(order["qty"]) * float(order["unit_price"])
    ctx.upsert_search_attrs(
        {"customer": str(order.get("customer", "anon")), "total": total}
    )
    ctx.log(f"order {order['id']} received, total {total:.2f} EUR")
    reservation = await ctx.execute_activity(reserve_inventory, order)
    status["stage"] = "reserved, cooling off"
    await ctx.sleep(order.get("cooling_off", "3s"))
    if total > APPROVAL_LIMIT:
        status["stage"] = "waiting for approval"
        ctx.log("large order: waiting for the approve signal")
        decision = await ctx.receive_signal("approve", Approval)
        if not decision.approved:
            status["stage"] = "rejected"
            why = f" ({decision.note})" if decision.note else ""
            raise ApplicationError(
                f"order rejected by {decision.by}{why}", type="Rejected"
            )
    status["stage"] = "charging"
    payment = await ctx.execute_activity(charge_card, order)
    status["stage"] = "charged, writing the confirmation"
    letter = await ctx.execute_activity(write_confirmation, order)
    status["stage"] = "shipping (child workflow ship_order)"
    shipping = await ctx.spawn_child_workflow(ship_order, order)
    status["stage"] = "done"
    ctx.log("order done")
    return f"{order['id']}: {reservation}; {payment}; {shipping}; {letter}"


@query(workflow="process_order")
def order_status(ctx: WorkflowContext, _: Any = None) -> str:
    """A query handler the inspector can call (part 2 adds the query form)."""
    return "running"


@update(workflow="process_order")
def apply_discount(ctx: WorkflowContext, discount: Discount) -> dict[str, Any]:
    """An update to try in the inspector: checked, recorded in the history, answered.

    A percent outside 0-50 fails the update (the form shows the typed error);
    the run itself goes on either way.
    """
    if not 0 < discount.percent <= 50:
        raise ApplicationError(
            f"a discount must be above 0 and at most 50 percent, got {discount.percent}",
            type="DiscountRefused",
        )
    return {"discount_percent": discount.percent, "reason": discount.reason or "none"}


@workflow
async def nightly_report(ctx: WorkflowContext, _: Any) -> str:
    """The scheduled demo workflow: its report's lines go out as a stream (the Progress tab)."""
    ctx.set_current_details("compiling the day's report")
    ctx.set_event("status", "compiling")
    report: str = await ctx.execute_activity(compile_report, None)
    for line in ("orders placed: 5", "charged: 4", "shipped: 3", report):
        ctx.write_stream("report", line)
    ctx.close_stream("report")
    ctx.set_event("status", "done")
    ctx.set_event("lines", 4)
    ctx.set_current_details("report sent")
    return report


WORKFLOWS = [process_order, ship_order, nightly_report]
ACTIVITIES = [
    reserve_inventory,
    charge_card,
    write_confirmation,
    ship_parcel,
    compile_report,
]
