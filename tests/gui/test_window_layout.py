"""The window at 1366x768 and 1024x700: times in view, no sideways detail, failure on top."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QApplication, QScrollArea

from harvest_engine import SqliteRuntime
from harvest_gui.demo.seed import register, seed
from harvest_gui.models.run_list import COLUMNS
from harvest_gui.views.main_window import MainWindow
from tests.gui.test_demo_child import drive_until_closed

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.gui


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The seeded demo with ORD-1001 completed and ORD-1004 failed; (path, done, failed)."""
    path = tmp_path_factory.mktemp("layout") / "demo.db"
    with SqliteRuntime.open(path) as rt:
        register(rt)
        started = [str(e) for e in seed(rt)]
        done, failed = started[0], started[3]
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(drive_until_closed(rt, failed))
            loop.run_until_complete(drive_until_closed(rt, done))
        finally:
            loop.close()
        assert rt.describe(failed).state == "FAILED"
        assert rt.describe(done).state == "COMPLETED"
    return path, done, failed


def settle(qtbot: Any) -> None:
    """Let layouts settle as a running window would (a scroll bar appearing relays out)."""
    for _ in range(3):
        QApplication.processEvents()
        qtbot.wait(30)


@pytest.mark.parametrize("size", [(1366, 768), (1024, 700)])
def test_times_stay_in_view_and_the_detail_never_scrolls_sideways(
    qtbot: Any, settings: Any, demo_runs: tuple[Path, str, str], size: tuple[int, int]
) -> None:
    path, done, failed = demo_runs
    window = MainWindow(settings)
    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    try:
        assert window.open_path(path, read_only=True)
        rl, detail = window.run_list, window.detail
        assert rl is not None
        assert detail is not None
        settle(qtbot)
        # The whole window fits the screen: nothing is off its right edge.
        assert window.minimumSizeHint().width() <= size[0]
        assert window.width() <= size[0]
        header = rl.table.horizontalHeader()
        room = rl.table.viewport().width()
        for title in ("Started", "Closed", "Duration"):
            col = COLUMNS.index(title)
            right = header.sectionViewportPosition(col) + header.sectionSize(col)
            assert header.sectionViewportPosition(col) >= 0, title
            assert right <= room, (title, right, room)
        for exec_id in (done, failed):
            assert rl.select_exec_id(exec_id)
            settle(qtbot)
            scroll = detail.summary.findChild(QScrollArea)
            assert scroll is not None
            assert scroll.horizontalScrollBar().maximum() == 0
            port = scroll.viewport()
            for view in detail.summary.payloads.values():
                button = view.copy_button
                if button.isVisible():
                    left = button.mapTo(port, QPoint(0, 0)).x()
                    assert left >= 0
                    assert left + button.width() <= port.width(), view.objectName()
    finally:
        window.close_session()


def test_a_failure_heads_the_summary_and_empty_payloads_fold_away(
    qtbot: Any, settings: Any, demo_runs: tuple[Path, str, str]
) -> None:
    path, _done, failed = demo_runs
    window = MainWindow(settings)
    qtbot.addWidget(window)
    window.resize(1366, 768)
    window.show()
    qtbot.waitExposed(window)
    try:
        assert window.open_path(path, read_only=True)
        assert window.run_list is not None
        assert window.detail is not None
        assert window.run_list.select_exec_id(failed)
        settle(qtbot)
        summary = window.detail.summary
        assert summary.failure.isVisible()
        assert "card declined by the bank" in summary.failure_reason.text()
        assert "CardDeclined" in summary.failure_reason.text()
        # Above everything else: the first thing the tab shows.
        top = summary.failure.mapTo(summary, QPoint(0, 0)).y()
        facts = summary.labels["exec_id"].mapTo(summary, QPoint(0, 0)).y()
        assert top < facts
        memo = summary.payloads["memo"]  # the demo sets no memo
        assert not memo.text.isVisible()
        assert memo.height() < 40
        assert "No memo." in memo.title.text() + memo.size_label.text()
        assert summary.payloads["input"].text.isVisible()
    finally:
        window.close_session()
