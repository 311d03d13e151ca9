"""Render the forms, the schedule editor, the tools and the crash demo to PNGs.

``xvfb-run -a -s "-screen 0 1366x768x24" python -m tools.screenshots_part2 OUT``
(or offscreen with ``QT_QPA_PLATFORM=offscreen``).
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvest_engine import WorkflowContext, workflow
from harvest_gui.demo.seed import DEMO_ORDERS, seed
from harvest_gui.forms.end_run import EndRunDialog
from harvest_gui.forms.handler_call import QueryDialog, UpdateDialog
from harvest_gui.forms.purge import PurgeDialog
from harvest_gui.forms.schedule_editor import ScheduleEditorDialog
from harvest_gui.forms.signal import SignalDialog
from harvest_gui.forms.start import StartWorkflowDialog
from harvest_gui.views.crash_demo import CrashDemoView
from harvest_gui.views.determinism import DeterminismView
from harvest_gui.views.diff import DiffView
from harvest_gui.views.storage import StorageView
from harvest_gui.views.time_travel import TimeTravelView
from tools.screenshot_runner import open_demo_window, run_shots, save_shot

if TYPE_CHECKING:
    from pathlib import Path

    from PySide6.QtWidgets import QWidget


@dataclass
class Restock:
    """A typed input, so the start form shows one field per attribute."""

    item: str
    qty: int
    express: bool = False
    note: str | None = None


@workflow
async def restock(ctx: WorkflowContext, order: Restock) -> str:
    """A workflow with a dataclass input (screenshots only)."""
    return f"restocked {order.qty}x {order.item}"


async def _settle(seconds: float) -> None:
    await asyncio.sleep(seconds)


def _exec_of(session: Any, workflow_id: str) -> str:
    from harvest_engine import ExecutionFilter

    page = session.list_executions(ExecutionFilter().workflow_id(workflow_id))
    return str(page.executions[0].exec_id)


async def shoot(out: Path, work: Path) -> list[Path]:
    """Seed a demo file, then open and photograph each part-2 window."""
    window, session = open_demo_window(work)
    session.runtime.register_workflow(restock)
    seed(session.runtime)
    big_input = next(o for o in DEMO_ORDERS if o["id"] == "ORD-1003")
    session.runtime.start_workflow_with_id("process_order", "ORD-1003-twin", big_input)
    session.refresh()
    await _settle(4.5)  # both large orders reserve, cool off, then wait for approval
    session.runtime.send_signal(
        _exec_of(session, "ORD-1003-twin"),
        "approve",
        {"approved": False, "by": "ops", "note": "over budget"},
    )
    await _settle(3.0)
    saved: list[Path] = []
    big = _exec_of(session, "ORD-1003")
    flaky = _exec_of(session, "ORD-1002")
    shown: list[QWidget] = []

    async def snap(widget: QWidget, name: str, w: int = 620, h: int = 0) -> None:
        shown.append(widget)
        widget.show()
        widget.resize(w, h or widget.sizeHint().height())
        saved.append(await save_shot(widget, out, name))

    start = StartWorkflowDialog(session)
    start.workflow.setCurrentText("restock")
    start.input.field_widgets["item"].setText("widget")
    start.input.field_widgets["qty"].setText("many")
    start.workflow_id.setText("restock-42")
    start.attributes.set_text('{"warehouse": "north"}')
    await snap(start, "form-start", 620, 640)
    sig = SignalDialog(session, big)
    sig.name.setCurrentText("approve")  # typed: one field per Approval attribute
    sig.payload.field_widgets["note"].setText("checked with the customer")
    sig.key.setText("webhook-7f3a")
    await snap(sig, "form-signal")
    q = QueryDialog(session, big)
    q.name.setCurrentText("order_status")
    q.on_submit_clicked()
    await _settle(0.3)
    await snap(q, "form-query")
    u = UpdateDialog(session, big)
    u.name.setCurrentText("apply_discount")
    u.arg.field_widgets["percent"].setText("10")
    u.arg.field_widgets["reason"].setText("loyal customer")
    u.on_submit_clicked()
    await _settle(0.3)
    await snap(u, "form-update")
    end = EndRunDialog(session, big, "terminate")
    end.reason.setText("customer called to cancel")
    end.confirm.setChecked(True)
    await snap(end, "form-terminate")
    rows = session.list_schedules()
    editor = ScheduleEditorDialog(session, rows[0] if rows else None)
    editor.cron_radio.setChecked(True)
    editor.cron.setText("0 3 * * 1-5")
    editor.timezone.setText("Europe/Berlin")
    await snap(editor, "schedule-editor", 680)
    purge = PurgeDialog(session)
    purge.amount.setValue(0)
    await snap(purge, "purge")
    storage = StorageView(session)
    shown.append(storage)
    storage.show()
    await storage.measure()
    saved.append(await save_shot(storage, out, "storage"))
    diff = DiffView(session, _exec_of(session, "ORD-1003-twin"), big)
    await snap(diff, "diff", 1180, 560)
    travel = TimeTravelView(session, flaky)
    travel.slider.setValue(7)
    travel.query_name.setCurrentText("status")
    travel.ask_query()
    await snap(travel, "time-travel", 1100, 560)
    check = DeterminismView(session, flaky)
    await snap(check, "determinism", 820, 60)
    for widget in shown:
        widget.close()
        widget.deleteLater()
    demo = CrashDemoView(work / "crash", seconds=3, pause=0.8)
    demo.show()
    task = demo.start()
    while demo.steps.count() < 5 and not task.done():
        await _settle(0.05)
    saved.append(await save_shot(demo, out, "crash-demo-stranded"))
    await task
    await _settle(0.5)
    demo.refresh_views()
    saved.append(await save_shot(demo, out, "crash-demo"))
    await demo.aclose()
    demo.close()
    demo.deleteLater()
    window.close()
    window.deleteLater()
    await _settle(0.3)
    return saved


def main(argv: list[str] | None = None) -> int:
    """Write the PNGs into the folder named on the command line."""
    return run_shots("tools.screenshots_part2", shoot, argv)


if __name__ == "__main__":
    sys.exit(main())
