"""Render the main views of a live demo workspace to PNGs: `python -m tools.screenshots OUT`.

Run it under Xvfb for real window decorations-free captures
(``xvfb-run -a -s "-screen 0 1366x768x24" python -m tools.screenshots OUT``),
or offscreen with ``QT_QPA_PLATFORM=offscreen``.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings

from harvest_gui.app import DEMO_APP
from harvest_gui.demo.seed import seed
from harvest_gui.session import WriterSession
from harvest_gui.settings import Settings
from harvest_gui.views.main_window import MainWindow
from harvest_gui.views.run_detail import (
    TAB_ATTEMPTS,
    TAB_COSTS,
    TAB_HISTORY,
    TAB_LOGS,
    TAB_PENDING,
    TAB_SUMMARY,
    TAB_TIMELINE,
)
from tools.screenshot_runner import run_shots

if TYPE_CHECKING:
    from pathlib import Path

    from PySide6.QtWidgets import QWidget


def _save(widget: QWidget, out: Path, name: str) -> Path:
    path = out / f"{name}.png"
    widget.grab().save(str(path))
    print(path)
    return path


async def _settle(seconds: float) -> None:
    # Sleeping lets qasync run Qt's events; processEvents() inside a coroutine
    # would step other tasks re-entrantly (QT-NOTES pitfall 4).
    await asyncio.sleep(seconds)


async def shoot(out: Path, work: Path) -> list[Path]:
    """Seed a demo file, let it run, and save one PNG per main view."""
    settings = Settings(
        QSettings(str(work / "settings.ini"), QSettings.Format.IniFormat)
    )
    window = MainWindow(settings, app_module=DEMO_APP)
    window.resize(1366, 768)  # MainWindow fits it to the 1366x768 screen's room
    window.show()
    path = work / "demo.harvest.db"
    window.open_path(path)
    session = window.session
    assert isinstance(session, WriterSession)
    seed(session.runtime)
    session.refresh()
    await _settle(
        8.5
    )  # the demo orders reserve, cool off, charge (one retries), ship (a child)
    saved: list[Path] = []
    rl, detail = window.run_list, window.detail
    assert rl is not None
    assert detail is not None
    rl.table.selectRow(rl.model.row_of(_exec_of(rl, "ORD-1002")))
    detail.tabs.setCurrentIndex(TAB_SUMMARY)
    await _settle(0.1)
    saved.append(_save(window, out, "runs-summary"))
    detail.tabs.setCurrentIndex(TAB_TIMELINE)
    await _settle(0.3)
    await _settle(0.1)
    saved.append(_save(window, out, "timeline"))
    detail.tabs.setCurrentIndex(TAB_ATTEMPTS)
    charge = [a.name for a in detail.attempts.model.records].index("charge_card")
    detail.attempts.table.selectRow(charge)  # the gateway timeout, retried
    await _settle(0.1)
    saved.append(_save(window, out, "attempts"))
    detail.tabs.setCurrentIndex(TAB_HISTORY)
    detail.history.table.selectRow(7)
    await _settle(0.1)
    saved.append(_save(window, out, "history"))
    detail.tabs.setCurrentIndex(TAB_COSTS)
    await _settle(0.1)
    saved.append(_save(window, out, "costs"))
    rl.table.selectRow(rl.model.row_of(_exec_of(rl, "ORD-1005")))
    detail.tabs.setCurrentIndex(TAB_PENDING)
    await _settle(0.3)
    await _settle(0.1)
    saved.append(_save(window, out, "pending"))
    rl.table.selectRow(rl.model.row_of(_exec_of(rl, "ORD-1003")))
    detail.tabs.setCurrentIndex(TAB_LOGS)
    await _settle(0.1)
    saved.append(_save(window, out, "logs"))
    window.pages.setCurrentIndex(1)
    await _settle(0.1)
    saved.append(_save(window, out, "schedules"))
    window.pages.setCurrentIndex(0)
    window.on_theme("dark")
    rl.table.selectRow(rl.model.row_of(_exec_of(rl, "ORD-1004")))
    detail.tabs.setCurrentIndex(TAB_TIMELINE)
    await _settle(0.3)
    await _settle(0.1)
    saved.append(_save(window, out, "dark-timeline"))
    window.on_theme("light")
    window.close_session()
    garbage = work / "notes.db"
    garbage.write_bytes(b"this is not a database\n" * 64)
    window.open_path(garbage)
    await _settle(0.3)
    box = window.last_dialog
    await _settle(0.1)
    saved.append(_save(window, out, "bad-file"))
    if box is not None:
        saved.append(_save(box, out, "bad-file-dialog"))
        box.accept()
    window.close()
    await _settle(0.2)
    return saved


def _exec_of(rl: object, workflow_id: str) -> str:
    model = rl.model  # type: ignore[attr-defined]
    for r in model.rows:
        if r.workflow_id == workflow_id:
            return str(r.exec_id)
    raise LookupError(workflow_id)


def main(argv: list[str] | None = None) -> int:
    """Write the PNGs into the folder named on the command line."""
    return run_shots("tools.screenshots", shoot, argv)


if __name__ == "__main__":
    sys.exit(main())
