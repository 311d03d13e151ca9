"""An --app module for the form tests: a dataclass input, a signal, a query and an update."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harvest_engine import ApplicationError, WorkflowContext, query, update, workflow


@dataclass
class Order:
    """A typed start input: the start form offers one field per attribute."""

    id: str
    qty: int
    unit_price: float = 1.0
    gift: bool = False
    tags: list[str] = field(default_factory=list)


@workflow
async def typed_order(ctx: WorkflowContext, order: Order) -> str:
    """Wait for "approve", then finish; a stage query and a price update along the way."""
    stage = {"value": "waiting", "price": order.unit_price}
    ctx.register_query("stage", lambda: stage["value"])

    def check_price(price: Any) -> None:
        if not isinstance(price, (int, float)) or price <= 0:
            raise ValueError("the price must be a positive number")

    async def set_price(price: float) -> float:
        stage["price"] = price
        return price * order.qty

    ctx.register_update_handler("set_price", check_price, set_price)
    decision = await ctx.wait_for_signal("approve")
    stage["value"] = "approved"
    return f"{order.id}: {decision} at {stage['price']}"


@workflow
async def plain(ctx: WorkflowContext, arg: Any) -> Any:
    """Any JSON input; waits for "go"."""
    return await ctx.wait_for_signal("go")


@query(workflow="plain")
def echo(ctx: WorkflowContext, arg: Any) -> Any:
    """A declarative query."""
    return {"echo": arg}


@update(workflow="plain")
async def boom(ctx: WorkflowContext, arg: Any) -> Any:
    """A declarative update whose handler fails."""
    raise ApplicationError("boom refused", type="Boom")


WORKFLOWS = [typed_order, plain]
QUERIES = [echo]
UPDATES = [boom]
