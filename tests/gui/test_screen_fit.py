"""Every top-level window and dialog fits a 1366x768 screen and opens on it (issue 17)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import QRect, QSize

from harvest_engine import SqliteRuntime
from harvest_gui.models.run_list import EXEC_ID_ROLE
from harvest_gui.views import screen_fit
from harvest_gui.views.crash_demo import CrashDemoView
from harvest_gui.views.main_window import MainWindow
from harvest_gui.views.storage import StorageView
from tests.gui.helpers import make_runs, waits_for_go

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from PySide6.QtWidgets import QWidget

pytestmark = pytest.mark.gui

SCREEN = QRect(0, 0, 1366, 768)
AREA = QRect(0, 0, 1366, 768 - 30)
"""The screen less a 30 px panel: what a window may use."""
FRAME_W, FRAME_TOP, FRAME_BOTTOM = 8, 32, 8
"""A window manager's frame around the client area."""

LONG_ID = "order-" + "very-long-customer-reference-" * 7


@pytest.fixture
def runs_file(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    make_runs(path, 3, finish=1)
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(waits_for_go)
        rt.start_workflow_with_id("waits_for_go", LONG_ID, {"i": 9})
    return path


@pytest.fixture
def small_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    """The app sees a 1366x768 screen (the offscreen platform's is 800x800)."""
    monkeypatch.setattr(screen_fit, "available_area", lambda _widget: AREA)


@pytest.fixture
def window(qtbot: Any, settings: Any, small_screen: None) -> Iterator[MainWindow]:
    w = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.operations.opened.close_windows()
    w.close()


def minimum(widget: QWidget) -> QSize:
    return widget.minimumSizeHint().expandedTo(widget.minimumSize())


def assert_fits_and_opens_on_screen(widget: QWidget) -> None:
    name = f"{type(widget).__name__}({widget.windowTitle()!r})"
    least = minimum(widget)
    assert least.width() <= AREA.width() - 2 * FRAME_W, (name, least)
    assert least.height() <= AREA.height() - FRAME_TOP - FRAME_BOTTOM, (name, least)
    # Room for a window manager's frame around the client area ...
    size = widget.size()
    assert size.width() + 2 * FRAME_W <= AREA.width(), (name, size)
    assert size.height() + FRAME_TOP + FRAME_BOTTOM <= AREA.height(), (name, size)
    # ... and the window, frame included, placed on the screen's usable area.
    frame = widget.frameGeometry()
    assert AREA.contains(frame), (name, frame)
    assert SCREEN.contains(frame), (name, frame)


def select_long_run(window: MainWindow) -> None:
    assert window.run_list is not None
    model = window.run_list.model
    for row in range(model.rowCount()):
        window.run_list.table.selectRow(row)  # every title passes through the window
    newest = model.data(model.index(0, 0), EXEC_ID_ROLE)
    assert window.run_list.select_exec_id(str(newest))


@pytest.mark.parametrize("read_only", [False, True])
def test_the_main_window_fits_with_any_run_selected(
    window: MainWindow, runs_file: Path, read_only: bool
) -> None:
    assert_fits_and_opens_on_screen(window)
    assert window.open_path(runs_file, read_only=read_only)
    select_long_run(window)
    assert window.detail is not None
    assert LONG_ID in window.detail.title.text()
    assert_fits_and_opens_on_screen(window)


def test_a_saved_geometry_from_a_bigger_screen_is_pulled_back_on(
    qtbot: Any, settings: Any, small_screen: None
) -> None:
    first = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(first)
    first.setGeometry(1500, 900, 1800, 1100)
    settings.set_blob("window/geometry", first.saveGeometry())
    second = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(second)
    second.show()
    assert_fits_and_opens_on_screen(second)
    second.close()


ACTIONS = [
    "start",
    "signal",
    "query",
    "update",
    "cancel",
    "terminate",
    "determinism",
    "time_travel",
    "diff",
    "new_schedule",
    "purge",
]


def test_every_tool_window_and_form_fits_and_opens_on_screen(
    qtbot: Any, window: MainWindow, runs_file: Path, tmp_path: Path
) -> None:
    assert window.open_path(runs_file, read_only=False)
    select_long_run(window)
    ops: Any = window.operations
    opened = []
    for key in ACTIONS:
        before = len(ops.opened.windows)
        ops.actions[key].trigger()
        assert len(ops.opened.windows) == before + 1, key
        opened.append(ops.opened.windows[-1])
    opened.append(ops.opened.show_window(StorageView(window.session)))
    opened.append(
        ops.opened.show_window(CrashDemoView(tmp_path / "crash-demo"), child=False)
    )
    for widget in opened:
        qtbot.waitExposed(widget)
        assert_fits_and_opens_on_screen(widget)
    ops.opened.close_windows()


def test_message_boxes_fit(qtbot: Any, window: MainWindow, tmp_path: Path) -> None:
    bad = tmp_path / ("not-a-database-" + "x" * 200 + ".db")
    bad.write_bytes(b"hello, not sqlite" * 100)
    assert not window.open_path(bad, read_only=False)
    box = window.last_dialog
    assert box is not None
    qtbot.waitExposed(box)
    assert minimum(box).width() <= AREA.width() - 2 * FRAME_W
    box.close()
    window.on_about()
    about = window.last_dialog
    assert about is not None
    assert minimum(about).width() <= AREA.width() - 2 * FRAME_W
    about.close()
