"""Render the repair views of the last pass (reset from the slider, bulk signal and reset) to PNGs.

``xvfb-run -a -s "-screen 0 1366x768x24" python -m tools.screenshots_part4 OUT``
(or offscreen with ``QT_QPA_PLATFORM=offscreen``). Under X the slider
picture is of the whole screen: the time-travel window with the reset form
over it.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

from harvest_engine import ExecutionFilter, reset_points
from harvest_gui.demo.seed import DEMO_ORDERS, seed
from harvest_gui.forms.bulk import BulkRunsDialog
from harvest_gui.forms.bulk_signal import BulkSignalDialog
from harvest_gui.forms.reset import ResetDialog
from harvest_gui.views.time_travel import TimeTravelView
from tools.screenshot_runner import open_demo_window, run_shots, save_shot

if TYPE_CHECKING:
    from pathlib import Path


async def shoot(out: Path, work: Path) -> list[Path]:
    """Seed the demo with a few declined orders, then photograph the three views."""
    window, session = open_demo_window(work)
    rt = session.runtime
    seed(rt)
    for i in range(1, 4):  # more failed orders, for the bulk reset
        order = {**DEMO_ORDERS[3], "id": f"ORD-300{i}", "declined": True}
        rt.start_workflow_with_id("process_order", order["id"], order)
    for i in range(1, 3):  # more large orders waiting for approval, for the bulk signal
        order = {**DEMO_ORDERS[2], "id": f"ORD-400{i}", "cooling_off": "1s"}
        rt.start_workflow_with_id("process_order", order["id"], order)
    session.refresh()
    await asyncio.sleep(8)  # the small orders complete, the declined ones fail
    saved: list[Path] = []
    done = session.list_executions(
        ExecutionFilter().workflow_id("ORD-1001").state("COMPLETED").limit(1)
    ).executions[0]
    window.on_open_run(str(done.exec_id))
    window.operations.on_time_travel()
    view = window.operations.opened.forms["time_travel"]
    assert isinstance(view, TimeTravelView)
    view.move(20, 20)
    points = reset_points(view.history)
    view.slider.setValue(points[len(points) // 2])
    view.reset_button.click()
    form = window.operations.opened.forms["reset"]
    assert isinstance(form, ResetDialog)
    form.move(620, 250)
    form.reason.setText("replay the charge with the fixed card client")
    form.confirm.setChecked(True)
    saved.append(await save_shot(view, out, "slider-reset", screen=True, settle=0.4))
    form.close()
    view.close()
    orders = ExecutionFilter().workflow_name("process_order")
    signal = BulkSignalDialog(session, orders, window)
    signal.show()
    signal.name.setCurrentText("approve")
    signal.payload.set_text('{"approved": true, "by": "ops", "note": "weekend batch"}')
    saved.append(await save_shot(signal, out, "bulk-signal", settle=0.4))
    signal.close()
    reset = BulkRunsDialog(session, orders.state("FAILED"), "reset", window)
    reset.show()
    reset.reason.setText("card client fixed")
    saved.append(await save_shot(reset, out, "bulk-reset", settle=0.4))
    reset.close()
    window.close()
    await asyncio.sleep(0.2)
    return saved


def main(argv: list[str] | None = None) -> int:
    """Write the PNGs into the folder named on the command line."""
    return run_shots("tools.screenshots_part4", shoot, argv)


if __name__ == "__main__":
    sys.exit(main())
