"""A run whose id is a megabyte (written by another tool) neither hangs nor widens anything."""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtWidgets import QLabel, QWidget

from harvest_gui.views.main_window import MainWindow
from tests.gui.helpers import make_runs

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui

HUGE = 1_000_000


@pytest.fixture
def huge_file(tmp_path: Path) -> Path:
    path = tmp_path / "huge.db"
    make_runs(path, 2)
    # The engine refuses such an id (InvalidName); a file from elsewhere may hold one.
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE harvest_executions SET workflow_id = ?, workflow_name = ? "
        "WHERE rowid = (SELECT MIN(rowid) FROM harvest_executions)",
        ("i" * HUGE, "n" * HUGE),
    )
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def window(qtbot: Any, settings: Any) -> Iterator[MainWindow]:
    w = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(w)
    w.resize(1200, 700)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.close()


def longest_label(root: QWidget) -> int:
    return max((len(label.text()) for label in root.findChildren(QLabel)), default=0)


@pytest.mark.parametrize("read_only", [True, False], ids=["read-only", "writer"])
def test_a_megabyte_id_is_cut_everywhere_and_the_window_keeps_its_size(
    qtbot: Any, window: MainWindow, huge_file: Path, read_only: bool
) -> None:
    started = time.monotonic()
    assert window.open_path(huge_file, read_only=read_only)
    assert window.run_list is not None
    assert window.detail is not None
    model = window.run_list.model
    for row in range(model.rowCount()):
        window.run_list.table.selectRow(row)
        for tab in range(window.detail.tabs.count()):
            window.detail.tabs.setCurrentIndex(tab)
        qtbot.wait(10)
        for col in range(model.columnCount()):
            assert len(str(model.data(model.index(row, col)) or "")) < 2_000
    assert time.monotonic() - started < 20  # no hang (it takes well under a second)
    assert longest_label(window) < 2_000
    assert window.minimumSizeHint().width() <= 1366
    assert window.width() <= 1366
    title = window.detail.title.text()
    assert "…" in title
    assert title.endswith("RUNNING")  # the state stays in view
