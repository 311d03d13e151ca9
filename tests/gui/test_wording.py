"""Words a newcomer read wrong or found odd (issue 17 item 12), read back from the widgets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from harvest_engine import (
    DatabaseLocked,
    ExecutionFilter,
    LedgerTotals,
    Schedule,
    SqliteRuntime,
    WorkflowSchedule,
)
from harvest_gui import APP_TITLE
from harvest_gui.session import ReaderSession
from harvest_gui.views.costs import CostsView
from harvest_gui.views.dialogs import locked_box
from harvest_gui.views.main_window import MainWindow
from harvest_gui.views.run_detail import RunDetailView
from harvest_gui.views.schedules import SchedulesView
from harvest_gui.views.storage import StorageView
from tests.gui.helpers import quick

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui


@pytest.fixture
def window(qtbot: Any, settings: Any) -> Iterator[MainWindow]:
    w = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(w)
    w.show()
    yield w
    w.operations.opened.close_windows()
    w.close()


def test_the_title_names_the_file_once_and_leaves_the_app_name_to_the_platform(
    window: MainWindow, db_file: Path
) -> None:
    assert window.windowTitle() == APP_TITLE
    assert window.open_path(db_file, read_only=True)
    assert window.windowTitle() == "runs.db (read-only)"
    assert QApplication.applicationDisplayName() not in window.windowTitle()


def test_one_schedule_and_one_call_are_singular_and_the_state_column_says_state(
    qtbot: Any, tmp_path: Path
) -> None:
    path = tmp_path / "sched.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(quick)
        rt.upsert_schedule(WorkflowSchedule("quick", Schedule.every("1h")))
    session = ReaderSession.open(path)
    try:
        view = SchedulesView(session)
        qtbot.addWidget(view)
        assert view.note.text() == "1 schedule."
        headers = [
            view.model.headerData(c, Qt.Orientation.Horizontal)
            for c in range(view.model.columnCount())
        ]
        assert "Paused" not in headers
        assert "State" in headers
    finally:
        session.close()
    costs = CostsView()
    qtbot.addWidget(costs)
    costs.show_costs([], LedgerTotals(1, 1, 2, 0.5))
    assert costs.totals.text().startswith(
        "Total: 1 call, 1 input token, 2 output tokens"
    )


def test_the_file_in_use_box_speaks_of_processes_not_classes(
    qtbot: Any, window: MainWindow, tmp_path: Path
) -> None:
    path = tmp_path / "busy.db"
    exc = DatabaseLocked(path=str(path), lock_path=f"{path}.lock", holder_pid=4242)
    box = locked_box(window, path, exc)
    assert box.text() == "busy.db is open in another harvest writer (process 4242)."
    assert "SqliteReader" not in box.informativeText()
    assert "Open it as a client?" in box.informativeText()
    assert "open it read-only" in box.informativeText()
    box.close()


def test_the_history_filter_does_not_follow_to_the_next_run(
    qtbot: Any, db_file: Path
) -> None:
    session = ReaderSession.open(db_file)
    try:
        detail = RunDetailView(session)
        qtbot.addWidget(detail)
        page = session.list_executions(ExecutionFilter())
        first, second = (e.exec_id for e in page.executions[:2])
        detail.show_run(str(first))
        detail.history.text_filter.setText("go")
        detail.show_run(str(second))
        assert detail.history.text_filter.text() == ""
        assert len(detail.history.filtered) == len(detail.history.events)
    finally:
        session.close()


def test_the_storage_window_has_close_and_escape_closes_tool_windows(
    qtbot: Any, window: MainWindow, db_file: Path
) -> None:
    assert window.open_path(db_file, read_only=True)
    ops: Any = window.operations
    view = ops.opened.show_window(StorageView(window.session))
    qtbot.waitExposed(view)
    assert view.close_button.text() == "&Close"
    qtbot.mouseClick(view.close_button, Qt.MouseButton.LeftButton)
    assert not view.isVisible()
    again = ops.opened.show_window(StorageView(window.session))
    qtbot.waitExposed(again)
    again.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is again)
    again.table.setFocus()
    qtbot.keyClick(again.table, Qt.Key.Key_Escape)
    assert not again.isVisible()
