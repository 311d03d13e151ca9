"""The workflows behind the golden histories, and how each scenario is driven.

Module-level definitions keep their registered names stable (STYLE §26).
Changing one of these workflows changes what its golden history must
replay against: regenerate deliberately with ``python -m tests.golden.regenerate``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harvest_engine import (
    ActivityContext,
    ActivityError,
    ApplicationError,
    RetryPolicy,
    WorkflowContext,
    activity,
    workflow,
)

# -- activities ------------------------------------------------------------------


@dataclass(frozen=True)
class Order:
    """An order, converted from and to JSON by its annotations."""

    id: str
    item: str
    qty: int


@activity
async def charge(ctx: ActivityContext, order: Order) -> str:
    """Charge for an order (an async body)."""
    return f"charged {order.id} for {order.qty}x {order.item} ({ctx.idempotency_key()})"


@activity
def ship(ctx: ActivityContext, order: Order) -> dict[str, Any]:
    """Ship an order (a sync body, off the loop thread)."""
    return {
        "order": order.id,
        "parcel": f"P-{order.qty}",
        "attempt": ctx.info().attempt,
    }


@activity(
    retry=RetryPolicy(max_attempts=4, initial_interval="1s", backoff_coefficient=2.0)
)
def flaky_lookup(ctx: ActivityContext, key: str) -> str:
    """Fail the first two attempts, then answer."""
    attempt = ctx.info().attempt
    if attempt < 3:
        raise RuntimeError(f"lookup of {key} failed on attempt {attempt}")
    return f"{key}=found on attempt {attempt}"


@activity(retry=RetryPolicy(max_attempts=5, initial_interval="1s"))
def reject(ctx: ActivityContext, order: Order) -> str:
    """Fail for good: a non-retryable error stops the retries at once."""
    raise ApplicationError(
        f"{order.item} is out of stock", type="OutOfStock", non_retryable=True
    )


@activity
def refund(ctx: ActivityContext, order: Order) -> str:
    """Compensate a failed order."""
    return f"refunded {order.id}"


# -- workflows -------------------------------------------------------------------


@workflow
async def golden_activities(ctx: WorkflowContext, order: Order) -> str:
    """Two activities in a row, with a dataclass input."""
    charged = await ctx.execute_activity(charge, order)
    shipped = await ctx.execute_activity(ship, order)
    return f"{charged}; parcel {shipped['parcel']}"


@workflow
async def golden_retries(ctx: WorkflowContext, key: str) -> str:
    """An activity that succeeds on its third attempt, after backoff."""
    return str(await ctx.execute_activity(flaky_lookup, key))


@workflow
async def golden_signals(ctx: WorkflowContext, _: Any) -> dict[str, Any]:
    """Every way of taking a signal: blocking, buffered, drained, by handler, with a deadline."""
    notes: list[Any] = []
    ctx.register_signal_handler("note", notes.append)
    approval = await ctx.wait_for_signal("approve")
    extras = ctx.drain_signals("extra")
    maybe = ctx.try_receive_signal("absent")
    late = await ctx.wait_for_signal_timeout("late", "1m")
    on_time = await ctx.wait_for_signal_timeout("soon", "1h")
    await ctx.await_condition(lambda: len(notes) >= 2)
    return {
        "approval": approval,
        "extras": extras,
        "maybe": maybe,
        "late": late,
        "on_time": on_time,
        "notes": notes,
    }


@workflow
async def golden_timers(ctx: WorkflowContext, _: Any) -> list[str]:
    """A sleep, a timer that fires and a timer that is cancelled."""
    seen = [ctx.now().isoformat()]
    await ctx.sleep("5m")
    seen.append(ctx.now().isoformat())
    doomed = ctx.start_timer("doomed", "1h")
    reminder = ctx.start_timer("reminder", "30s")
    outcome = await reminder.await_fire()
    doomed.cancel()
    await ctx.timer(10)
    seen += [outcome.name, ctx.now().isoformat()]
    return seen


@workflow
async def golden_gather(ctx: WorkflowContext, order: Order) -> dict[str, Any]:
    """asyncio.gather, ctx.wait and ctx.as_completed over activities and timers."""
    charged, shipped = await asyncio.gather(
        ctx.execute_activity(charge, order), ctx.execute_activity(ship, order)
    )
    deadline = ctx.start_timer("deadline", "1h")
    contenders = [
        asyncio.ensure_future(deadline.await_fire()),
        asyncio.ensure_future(ctx.execute_activity(ship, order)),
    ]
    done, _ = await ctx.wait(contenders, return_when=asyncio.FIRST_COMPLETED)
    deadline.cancel()
    winners = [contenders.index(f) for f in done]

    async def after(seconds: int, label: str) -> str:
        await ctx.sleep(seconds)
        return label

    order_of = [
        await aw for aw in ctx.as_completed([after(20, "slow"), after(10, "fast")])
    ]
    return {
        "charged": charged,
        "shipped": shipped,
        "winners": winners,
        "as_completed": order_of,
    }


@workflow
async def golden_side_effects(ctx: WorkflowContext, _: Any) -> dict[str, Any]:
    """Recorded side effects and the run-seeded random values."""
    token = await ctx.side_effect(lambda: {"token": "t-1"})
    again = await ctx.side_effect(lambda: 7)
    return {
        "token": token,
        "again": again,
        "random": ctx.random(),
        "uuid": str(ctx.uuid4()),
        "now": ctx.now().isoformat(),
        "info": [ctx.info().workflow_name, ctx.info().attempt],
    }


@workflow
async def golden_failed_run(ctx: WorkflowContext, order: Order) -> str:
    """An activity fails for good; the run compensates and fails with its own error."""
    try:
        await ctx.execute_activity(reject, order)
    except ActivityError as exc:
        refunded = await ctx.execute_activity(refund, order)
        raise ApplicationError(
            f"order {order.id} rejected: {exc.message} ({refunded})",
            type="OrderRejected",
        ) from exc
    return "unreachable"


# -- scenarios -------------------------------------------------------------------

ORDER = {"id": "ORD-1", "item": "widget", "qty": 3}


@dataclass(frozen=True)
class Scenario:
    """One golden history: which workflow, its input, and the outside world's script.

    Attributes:
        name: the file stem under tests/golden/.
        workflow: the @workflow function that records it.
        input: the start input.
        early_signals: staged before the first drive, in order.
        on_block: signals to send, in order, when the run blocks on that name.
        step: how far the clock moves when the run waits on time.
    """

    name: str
    workflow: Callable[..., Any]
    input: Any = None
    early_signals: list[tuple[str, Any]] = field(default_factory=list)
    on_block: dict[str, list[Any]] = field(default_factory=dict)
    step: str = "1s"

    @property
    def exec_id(self) -> str:
        """The pinned exec id of the recorded run (keys and seeds derive from it)."""
        return f"golden-{self.name}"


SCENARIOS = [
    Scenario("activities", golden_activities, ORDER),
    Scenario("retries", golden_retries, "sku-9"),
    Scenario(
        "signals",
        golden_signals,
        early_signals=[
            ("extra", 1),
            ("note", "first"),
            ("extra", 2),
            ("note", "second"),
        ],
        on_block={"approve": [{"by": "ops"}], "soon": ["in time"], "late": []},
        step="20s",
    ),
    Scenario("timers", golden_timers, step="10s"),
    Scenario("gather", golden_gather, ORDER, step="5s"),
    Scenario("side_effects", golden_side_effects),
    Scenario("failed_run", golden_failed_run, ORDER),
]

WORKFLOWS = [s.workflow for s in SCENARIOS]
ACTIVITIES = [charge, ship, flaky_lookup, reject, refund]
