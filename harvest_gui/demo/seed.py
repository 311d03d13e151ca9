"""Register the demo workflows on a runtime and start the demo runs and schedule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import (
    ExecutionFilter,
    Schedule,
    WorkflowLogPolicy,
    WorkflowSchedule,
)
from harvest_gui.demo.workflows import (
    ACTIVITIES,
    WORKFLOWS,
    apply_discount,
    order_status,
)

if TYPE_CHECKING:
    from harvest_engine import ExecutionId, Runtime

DEMO_ORDERS: list[dict[str, Any]] = [
    {
        "id": "ORD-1001",
        "item": "widget",
        "qty": 3,
        "unit_price": 4.5,
        "customer": "ada",
    },
    {
        "id": "ORD-1002",
        "item": "gizmo",
        "qty": 1,
        "unit_price": 19.0,
        "customer": "grace",
        "flaky": True,
    },
    {
        "id": "ORD-1003",
        "item": "sprocket",
        "qty": 40,
        "unit_price": 7.25,
        "customer": "linus",
    },
    {
        "id": "ORD-1004",
        "item": "doohickey",
        "qty": 2,
        "unit_price": 12.0,
        "customer": "ada",
        "declined": True,
    },
    {
        "id": "ORD-1005",
        "item": "widget",
        "qty": 10,
        "unit_price": 4.5,
        "customer": "barbara",
        "cooling_off": "20s",
    },
]


def register(rt: Runtime) -> None:
    """Register every demo workflow and activity (the `--app` convention of harvest-gui)."""
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    for act in ACTIVITIES:
        rt.register_activity(act)
    rt.register_query(order_status)
    rt.register_update(apply_discount)
    # Keep `ctx.log` lines so the Logs tab has something to show.
    rt.set_workflow_log_policy(WorkflowLogPolicy(max_lines=200))


def seed(rt: Runtime) -> list[ExecutionId]:
    """Start the demo runs and the report schedule, once per file.

    Returns:
        The runs started now (none when the file already holds demo runs).

    """
    if rt.list_executions(ExecutionFilter().limit(1)).executions:
        return []
    started = [
        rt.start_workflow_with_id("process_order", order["id"], order)
        for order in DEMO_ORDERS
    ]
    rt.upsert_schedule(WorkflowSchedule("nightly_report", Schedule.every("1m")))
    return started
