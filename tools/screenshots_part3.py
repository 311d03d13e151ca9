"""Render the third wave's views (Progress tab, a schedule's runs, Backfill…) to PNGs.

``xvfb-run -a -s "-screen 0 1366x768x24" python -m tools.screenshots_part3 OUT``
(or offscreen with ``QT_QPA_PLATFORM=offscreen``).
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from PySide6.QtCore import QDateTime, QTimeZone

from harvest_engine import ExecutionFilter, Queue, StartOptions
from harvest_gui.demo.seed import DEMO_ORDERS, seed
from harvest_gui.forms.bulk import BulkRunsDialog
from harvest_gui.forms.fork import ForkDialog, activity_steps
from harvest_gui.views.run_detail import TAB_PROGRESS
from tools.screenshot_runner import open_demo_window, run_shots, save_shot

if TYPE_CHECKING:
    from pathlib import Path


async def shoot(out: Path, work: Path) -> list[Path]:
    """Seed the demo, fire its schedule by hand, and photograph the new views."""
    window, session = open_demo_window(work)
    rt = session.runtime
    seed(rt)
    rt.trigger_schedule("nightly_report")
    # Three large orders through a one-at-a-time queue: one runs, two wait their turn.
    rt.register_queue(Queue("fulfilment", concurrency=1))
    queued = [
        rt.start_workflow_with_options(
            "process_order",
            {**DEMO_ORDERS[0], "id": f"ORD-200{i}", "cooling_off": "10m"},
            StartOptions(workflow_id=f"ORD-200{i}", queue="fulfilment"),
        ).exec_id
        for i in range(1, 4)
    ]
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    session.refresh()
    await asyncio.sleep(5)  # the report compiles; the orders move on
    # Once the triggered run is done (a skip schedule drops slots while one runs).
    rt.backfill_schedule("nightly_report", now - timedelta(minutes=3), now)
    await asyncio.sleep(2)
    saved: list[Path] = []
    rl, detail, schedules = window.run_list, window.detail, window.schedules
    assert rl is not None
    assert detail is not None
    assert schedules is not None
    report = session.list_executions(
        ExecutionFilter().workflow_name("nightly_report").limit(1)
    ).executions[0]
    window.on_open_run(str(report.exec_id))
    detail.tabs.setCurrentIndex(TAB_PROGRESS)
    saved.append(await save_shot(window, out, "progress"))
    window.on_open_run(str(queued[-1]))
    detail.tabs.setCurrentIndex(0)
    saved.append(await save_shot(window, out, "queued-run"))
    window.pages.setCurrentIndex(2)
    saved.append(await save_shot(window, out, "queues"))
    bulk = BulkRunsDialog(
        session, ExecutionFilter().workflow_name("process_order"), "cancel", window
    )
    bulk.show()
    saved.append(await save_shot(bulk, out, "bulk-cancel"))
    bulk.close()
    done = session.list_executions(
        ExecutionFilter().workflow_name("process_order").state("COMPLETED").limit(1)
    ).executions[0]
    fork = ForkDialog(
        session,
        str(done.exec_id),
        activity_steps(session.load_history(str(done.exec_id))),
        window,
    )
    fork.show()
    saved.append(await save_shot(fork, out, "fork"))
    fork.close()
    window.pages.setCurrentIndex(1)
    schedules.select_schedule("nightly_report")
    schedules.trigger_button.click()
    saved.append(await save_shot(window, out, "schedule-runs"))
    schedules.backfill_button.click()
    dialog = schedules.backfill_dialog
    assert dialog is not None
    start = now - timedelta(minutes=30)
    dialog.start_edit.setDateTime(
        QDateTime.fromSecsSinceEpoch(int(start.timestamp()), QTimeZone.utc())
    )
    saved.append(await save_shot(dialog, out, "backfill"))
    dialog.close()
    window.close()
    await asyncio.sleep(0.2)
    return saved


def main(argv: list[str] | None = None) -> int:
    """Write the PNGs into the folder named on the command line."""
    return run_shots("tools.screenshots_part3", shoot, argv)


if __name__ == "__main__":
    sys.exit(main())
