"""Diff, time travel, determinism and storage views through real widgets on real files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTableView

from harvest_gui.inspect.history_diff import CHANGED
from harvest_gui.session import ReaderSession, WriterSession
from harvest_gui.views.determinism import DeterminismView
from harvest_gui.views.diff import DiffView
from harvest_gui.views.pending import PendingView
from harvest_gui.views.storage import StorageView
from harvest_gui.views.time_travel import TimeTravelView
from tests.gui.history_app import make_steps_file

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui


@pytest.fixture
def steps(tmp_path: Path) -> tuple[Path, list[str]]:
    path = tmp_path / "steps.db"
    return path, make_steps_file(path)


@pytest.fixture
def reader(steps: Any) -> Iterator[ReaderSession]:
    session = ReaderSession.open(steps[0])
    yield session
    session.close()


def test_diff_view_highlights_and_selects_the_first_difference(
    qtbot: Any, reader: ReaderSession, steps: Any
) -> None:
    _, ids = steps
    view = DiffView(reader, ids[0], ids[1])
    qtbot.addWidget(view)
    view.show()
    assert view.diff is not None
    assert view.diff.first_difference is not None
    first = view.diff.first_difference
    assert view.table.selectionModel().selectedRows()[0].row() == first
    assert view.model.rows[first].kind == CHANGED
    assert view.model.index(first, 1).data() == "SignalReceived"
    assert view.model.index(first, 0).data(Qt.ItemDataRole.BackgroundRole) is not None
    assert view.summary.text().startswith("First difference at event")
    view.right.setCurrentText(ids[0])
    qtbot.mouseClick(view.compare_button, Qt.MouseButton.LeftButton)
    assert view.summary.text().startswith("The histories match")
    view.right.setCurrentText("no-such-run")
    qtbot.mouseClick(view.compare_button, Qt.MouseButton.LeftButton)
    assert view.summary.text().startswith("Execution not found")


def test_time_travel_slider_shows_the_run_as_of_each_event(
    qtbot: Any, reader: ReaderSession, steps: Any
) -> None:
    _, ids = steps
    view = TimeTravelView(reader, ids[0])
    qtbot.addWidget(view)
    view.show()
    n = view.slider.maximum()
    assert view.slider.value() == n
    assert view.state.text() == "COMPLETED"
    assert view.pending.rowCount() == 0
    view.slider.setValue(3)  # WorkflowStarted, ActivityScheduled, ...
    kinds = [view.history[i].type for i in range(3)]
    assert view.position.text().startswith(f"Event 3 of {n}: {kinds[2]}")
    view.slider.setValue(2)
    assert view.state.text() == "RUNNING"
    assert view.pending.rowCount() == 1
    assert view.pending.item(0, 1).text() == "step"
    assert "still running" in view.outcome.toPlainText()
    qtbot.mouseClick(view.next_button, Qt.MouseButton.LeftButton)
    assert view.slider.value() == 3
    view.slider.setFocus()
    qtbot.keyClick(view.slider, Qt.Key.Key_End)
    assert view.slider.value() == n
    assert '"a"' in view.outcome.toPlainText()


def test_determinism_check_clean_and_divergent(qtbot: Any, steps: Any) -> None:
    path, ids = steps
    for app, clean in (
        ("tests.gui.apps.steps_v1", True),
        ("tests.gui.apps.steps_v2", False),
    ):
        session = WriterSession.open(path, app)
        try:
            view = DeterminismView(session, ids[0])
            qtbot.addWidget(view)
            view.show()
            assert view.verdict is not None
            assert view.verdict.clean is clean
            if clean:
                assert view.verdict_label.text().startswith("Replays cleanly")
                assert not view.sides.isVisible()
            else:
                assert view.verdict_label.text().startswith("Diverges at event")
                assert "ActivityScheduled" in view.recorded.toPlainText()
                assert "Timer" in view.expected.toPlainText()
                assert '"type": "ActivityScheduled"' in view.event_json.toPlainText()
            view.close()
        finally:
            session.close()


def test_determinism_check_needs_the_code(
    qtbot: Any, reader: ReaderSession, steps: Any
) -> None:
    view = DeterminismView(reader, steps[1][0])
    qtbot.addWidget(view)
    assert view.verdict is None
    assert view.verdict_label.text().startswith("Cannot check")


def test_storage_view_measures_off_the_ui_thread(
    qtbot: Any, qloop: Any, reader: ReaderSession
) -> None:
    view = StorageView(reader)
    qtbot.addWidget(view)
    view.show()
    report = qloop.run_until_complete(view.measure())
    assert report is not None
    assert report.total_runs == 3
    assert view.file_size.text().endswith(("KiB", "MiB", "B"))
    rows = {
        view.table.item(r, 0).text(): view.table.item(r, 1).text() for r in range(3)
    }
    assert rows == {"COMPLETED": "2", "RUNNING": "1", "total": "3"}
    assert "closed within the last day" in view.suggestion.text()
    assert not view.purge_button.isEnabled()  # read-only


def test_every_record_table_column_is_wide_enough_for_its_title(qtbot: Any) -> None:
    view = PendingView()
    qtbot.addWidget(view)
    tables = list(view.findChildren(QTableView))
    assert len(tables) == 4
    for table in tables:
        header = table.horizontalHeader()
        for col in range(table.model().columnCount()):
            title = str(table.model().headerData(col, Qt.Orientation.Horizontal))
            room = (
                header.fontMetrics().horizontalAdvance(title) + 20
            )  # the sort arrow, margins
            assert header.sectionSize(col) >= room, title
