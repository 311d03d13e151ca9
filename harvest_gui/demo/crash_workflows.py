"""The crash-recovery demo's workflow: three sync steps, the middle one slow, each logging its runs."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from harvest_engine import ActivityContext, WorkflowContext, activity, workflow

DEMO_WORKFLOW_ID = "crash-demo-order"


def _mark(order: dict[str, Any], step: str, what: str, ctx: ActivityContext) -> None:
    """Append one line to the marks file: which process ran which step (the demo's evidence)."""
    line = f"{time.time():.3f} {step} {what} pid={os.getpid()} key={ctx.idempotency_key()}\n"
    with Path(order["marks"]).open("a", encoding="utf-8") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


@activity(start_to_close="5m")
def prepare_order(ctx: ActivityContext, order: dict[str, Any]) -> str:
    """A quick first step: it completes before the crash and must not run again."""
    _mark(order, "prepare_order", "start", ctx)
    _mark(order, "prepare_order", "end", ctx)
    return f"prepared {order['id']}"


@activity(start_to_close="5m")
def pack_parcel(ctx: ActivityContext, order: dict[str, Any]) -> str:
    """The slow step (a sync body: it runs off the UI thread); the worker is killed inside it."""
    _mark(order, "pack_parcel", "start", ctx)
    deadline = time.monotonic() + float(order.get("seconds", 4))
    while time.monotonic() < deadline:
        time.sleep(0.05)
    _mark(order, "pack_parcel", "end", ctx)
    return f"packed {order['id']}"


@activity(start_to_close="5m")
def ship_order(ctx: ActivityContext, order: dict[str, Any]) -> str:
    """The last step, reached only after the resume."""
    _mark(order, "ship_order", "start", ctx)
    _mark(order, "ship_order", "end", ctx)
    return f"shipped {order['id']}"


@workflow
async def crash_demo_order(ctx: WorkflowContext, order: dict[str, Any]) -> str:
    """Prepare, pack (slow), ship."""
    prepared = await ctx.execute_activity(prepare_order, order)
    packed = await ctx.execute_activity(pack_parcel, order)
    shipped = await ctx.execute_activity(ship_order, order)
    return f"{prepared}; {packed}; {shipped}"


WORKFLOWS = [crash_demo_order]
ACTIVITIES = [prepare_order, pack_parcel, ship_order]
STEPS = ("prepare_order", "pack_parcel", "ship_order")


def register(rt: Any) -> None:
    """Register the demo workflow and its activities (the `--app` convention)."""
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    for act in ACTIVITIES:
        rt.register_activity(act)


def read_marks(path: str | Path) -> list[tuple[float, str, str, int]]:
    """The marks file as (time, step, start|end, pid) rows (missing file: none)."""
    rows = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[3].startswith("pid="):
            rows.append((float(parts[0]), parts[1], parts[2], int(parts[3][4:])))
    return rows
