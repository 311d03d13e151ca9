"""The run list's layout: the new-runs bar floats over the table, rows never move under it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from harvest_engine import SqliteRuntime
from harvest_gui.models.run_list import EXEC_ID_ROLE
from harvest_gui.session import ReaderSession
from harvest_gui.views.run_list import RunListView
from tests.gui.helpers import make_runs, quick
from tests.gui.test_run_list_new_runs import start_runs

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui


@pytest.fixture
def listed(tmp_path: Path, qtbot: Any) -> Iterator[tuple[Path, RunListView]]:
    path = tmp_path / "runs.db"
    make_runs(path, 40)
    session = ReaderSession.open(path)
    view = RunListView(session)
    qtbot.addWidget(view)
    view.resize(900, 420)
    view.show()
    qtbot.waitExposed(view)
    yield path, view
    session.close()


def test_the_new_runs_bar_appearing_leaves_every_row_where_it_was(
    qtbot: Any, listed: Any
) -> None:
    path, view = listed
    table = view.table
    rect = table.visualRect(view.proxy.index(3, 1))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    # The same point on the screen, whatever the layout does to the table.
    aim = table.viewport().mapToGlobal(rect.center())
    table_top = table.mapTo(view, QPoint(0, 0)).y()

    def under_aim() -> str:
        index = table.indexAt(table.viewport().mapFromGlobal(aim))
        return str(view.proxy.data(index, EXEC_ID_ROLE))

    meant = under_aim()
    start_runs(path, 2)
    view.refresh()
    for _ in range(5):  # let the layout settle as a running window would
        QApplication.processEvents()

    assert view.new_runs_bar.isVisible()
    assert view.new_runs_bar.text() == "▲ 2 new runs: click to show"
    assert table.mapTo(view, QPoint(0, 0)).y() == table_top
    assert under_aim() == meant
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert view.selected_exec_id() == meant


def start_jobs(path: Path, n: int) -> None:
    rt = SqliteRuntime.open(path)
    try:
        rt.register_workflow(quick)
        for i in range(n):
            rt.start_workflow_with_id("quick", f"job-{i:05d}", i)
    finally:
        rt.close()


@pytest.fixture
def jobs(tmp_path: Path, qtbot: Any) -> Iterator[RunListView]:
    path = tmp_path / "jobs.db"
    start_jobs(path, 1200)
    session = ReaderSession.open(path)
    view = RunListView(session)
    qtbot.addWidget(view)
    view.resize(900, 420)
    view.show()
    qtbot.waitExposed(view)
    yield view
    session.close()


def first_ids(view: RunListView, n: int) -> list[str]:
    return [str(view.proxy.index(r, 1).data()) for r in range(n)]


def test_sorting_by_workflow_id_sorts_every_run_not_only_the_loaded_page(
    qtbot: Any, jobs: RunListView
) -> None:
    view = jobs
    assert view.model.rowCount() < 1200  # one page loaded: the newest runs
    view.table.horizontalHeader().setSortIndicator(1, Qt.SortOrder.AscendingOrder)
    assert first_ids(view, 2) == ["job-00000", "job-00001"]
    assert view.model.rowCount() == 1200
    assert view.sort_note.isHidden()
    view.table.horizontalHeader().setSortIndicator(1, Qt.SortOrder.DescendingOrder)
    assert first_ids(view, 1) == ["job-01199"]


def test_past_the_cap_the_list_says_only_loaded_rows_sort(
    qtbot: Any, jobs: RunListView
) -> None:
    view = jobs
    view.sort_cap = 500
    view.table.horizontalHeader().setSortIndicator(1, Qt.SortOrder.AscendingOrder)
    assert view.sort_note.isVisible()
    assert "only" in view.sort_note.text()
    assert "loaded" in view.sort_note.text()
    assert "only the loaded rows" in view.table.horizontalHeader().toolTip()
