"""New runs wait behind an "N new runs" bar instead of sliding rows under the pointer (issue 17 §3)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QEnterEvent, QMouseEvent
from PySide6.QtWidgets import QApplication

from harvest_engine import SqliteRuntime
from harvest_gui.models.run_list import EXEC_ID_ROLE
from harvest_gui.session import ReaderSession
from harvest_gui.views.run_list import RunListView
from tests.gui.helpers import make_runs, quick, waits_for_go

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui


@pytest.fixture
def listed(tmp_path: Path, qtbot: Any) -> Iterator[tuple[Path, RunListView]]:
    path = tmp_path / "runs.db"
    make_runs(path, 60)
    session = ReaderSession.open(path)
    view = RunListView(session)
    qtbot.addWidget(view)
    view.resize(900, 420)
    view.show()
    qtbot.waitExposed(view)
    yield path, view
    session.close()


def start_runs(path: Path, n: int) -> list[str]:
    rt = SqliteRuntime.open(path)
    try:
        rt.register_workflow(waits_for_go)
        rt.register_workflow(quick)
        return [str(rt.start_workflow("quick", i)) for i in range(n)]
    finally:
        rt.close()


def under(view: RunListView, point: QPoint) -> str:
    index = view.table.indexAt(point)
    return str(view.proxy.data(index, EXEC_ID_ROLE))


def centre_of_row(view: RunListView, row: int) -> QPoint:
    return view.table.visualRect(view.proxy.index(row, 1)).center()


def test_rows_stay_under_the_pointer_and_a_bar_counts_the_new_runs(
    qtbot: Any, listed: Any
) -> None:
    path, view = listed
    table = view.table
    qtbot.mouseClick(
        table.viewport(), Qt.MouseButton.LeftButton, pos=centre_of_row(view, 2)
    )
    selected = view.selected_exec_id()
    aim = centre_of_row(view, 4)
    meant = under(view, aim)
    assert view.new_runs_bar.isHidden()

    new = start_runs(path, 3)
    view.refresh()

    assert under(view, aim) == meant
    assert table.verticalScrollBar().value() == 0
    assert view.selected_exec_id() == selected
    assert not view.new_runs_bar.isHidden()
    assert view.new_runs_bar.text() == "▲ 3 new runs: click to show"
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=aim)
    assert view.selected_exec_id() == meant  # the click lands on the run aimed at

    qtbot.mouseClick(view.new_runs_bar, Qt.MouseButton.LeftButton)

    assert view.new_runs_bar.isHidden()
    assert [under(view, centre_of_row(view, r)) for r in range(3)] == new[::-1]
    assert view.selected_exec_id() == meant


def test_a_scrolled_list_keeps_its_scroll_position(qtbot: Any, listed: Any) -> None:
    path, view = listed
    bar = view.table.verticalScrollBar()
    bar.setValue(bar.maximum() // 2)
    value = bar.value()
    aim = QPoint(40, 40)
    meant = under(view, aim)

    start_runs(path, 2)
    view.refresh()

    assert bar.value() == value
    assert under(view, aim) == meant
    assert view.new_runs_bar.text() == "▲ 2 new runs: click to show"


def test_following_a_link_to_a_held_run_shows_it(qtbot: Any, listed: Any) -> None:
    path, view = listed
    qtbot.mouseClick(  # a hand on the list: new runs are held from now on
        view.table.viewport(), Qt.MouseButton.LeftButton, pos=centre_of_row(view, 0)
    )
    (new,) = start_runs(path, 1)
    view.refresh()
    assert view.model.row_of(new) < 0

    assert view.select_exec_id(new)

    assert view.selected_exec_id() == new
    assert view.new_runs_bar.isHidden()


def test_a_pointer_moving_over_the_untouched_list_holds_new_runs_until_it_leaves(
    qtbot: Any, listed: Any
) -> None:
    """Found under Xvfb: two children started while the pointer moved to ORD-1003 (issue 31 §5).

    Before any click the list takes new runs in at once (no bar at first
    open); the click then landed on ORD-1005, two rows lower.
    """
    path, view = listed
    viewport = view.table.viewport()
    aim = centre_of_row(view, 4)
    meant = under(view, aim)
    start_runs(path, 1)
    view.refresh()  # untouched, no pointer: the new run simply goes in
    assert view.new_runs_bar.isHidden()
    meant = under(view, aim)

    # The window opening under a resting pointer holds nothing (issue 31 §14) ...
    QApplication.sendEvent(
        viewport, QEnterEvent(QPointF(aim), QPointF(aim), QPointF(aim))
    )
    start_runs(path, 1)
    view.refresh()
    assert view.new_runs_bar.isHidden()
    meant = under(view, aim)
    # ... a pointer moving to aim at a row does.
    QApplication.sendEvent(
        viewport,
        QMouseEvent(
            QEvent.Type.MouseMove,
            QPointF(aim),
            QPointF(view.table.viewport().mapToGlobal(aim)),
            Qt.MouseButton.NoButton,
            Qt.MouseButton.NoButton,
            Qt.KeyboardModifier.NoModifier,
        ),
    )
    new = start_runs(path, 2)
    view.refresh()
    assert under(view, aim) == meant  # the row under the pointer stays
    assert view.new_runs_bar.text() == "▲ 2 new runs: click to show"
    qtbot.mouseClick(viewport, Qt.MouseButton.LeftButton, pos=aim)
    assert view.selected_exec_id() == meant

    # A pointer that only rested there lets the held runs in when it leaves.
    QApplication.sendEvent(viewport, QEvent(QEvent.Type.Leave))
    assert view.model.row_of(new[0]) < 0  # the click made it a touched list
    view.new_runs.hover_hold = True  # (as if it had only moved over it)
    QApplication.sendEvent(viewport, QEvent(QEvent.Type.Leave))
    assert view.model.row_of(new[0]) >= 0
    assert view.new_runs_bar.isHidden()
