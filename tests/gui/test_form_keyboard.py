"""Forms driven by the keyboard: Enter never deletes, focus starts in the first field (issue 31)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from harvest_engine import Schedule, SqliteReader, WorkflowSchedule
from harvest_gui.forms.schedule_editor import ScheduleEditorDialog
from harvest_gui.session import WriterSession
from tests.gui.history_app import make_steps_file

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui


@pytest.fixture
def path(tmp_path: Path) -> Path:
    p = tmp_path / "keys.db"
    make_steps_file(p)
    return p


@pytest.fixture
def writer(path: Path) -> Iterator[WriterSession]:
    session = WriterSession.open(path, "tests.gui.apps.steps_v1")
    yield session
    session.close()


def schedules(path: Path) -> dict[str, Any]:
    with SqliteReader.open(path) as reader:
        return {row.workflow_name: row for row in reader.list_schedules()}


def press(qtbot: Any, dialog: Any, key: Qt.Key) -> None:
    """A key as the user presses it: to whatever has the keyboard focus."""
    target = QApplication.focusWidget() or dialog.focusWidget() or dialog
    qtbot.keyClick(target, key)


def shown(qtbot: Any, dialog: Any) -> Any:
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow)
    return dialog


def test_pause_then_two_enters_delete_nothing(
    qtbot: Any, writer: WriterSession, path: Path
) -> None:
    writer.runtime.upsert_schedule(every_hour())
    dlg = shown(qtbot, ScheduleEditorDialog(writer, schedules(path)["steps"]))
    dlg.pause_button.setFocus()
    press(qtbot, dlg, Qt.Key.Key_Space)
    assert schedules(path)["steps"].paused
    focused = QApplication.focusWidget()
    assert focused is not dlg.delete_button
    assert focused is not dlg.confirm_delete
    press(qtbot, dlg, Qt.Key.Key_Return)
    press(qtbot, dlg, Qt.Key.Key_Return)
    assert "steps" in schedules(path)  # still stored
    assert not dlg.confirm_delete.isVisible()
    # No destructive button takes Enter, even when it has the focus.
    for button in (dlg.delete_button, dlg.confirm_delete):
        assert not button.autoDefault()
        assert not button.isDefault()


def test_delete_asks_with_the_schedules_name_and_enter_does_not_answer(
    qtbot: Any, writer: WriterSession, path: Path
) -> None:
    writer.runtime.upsert_schedule(every_hour())
    dlg = shown(qtbot, ScheduleEditorDialog(writer, schedules(path)["steps"]))
    dlg.delete_button.setFocus()
    press(qtbot, dlg, Qt.Key.Key_Space)  # the first press only asks
    assert dlg.confirm_delete.isVisible()
    assert "steps" in dlg.confirm_delete.text()
    assert QApplication.focusWidget() is not dlg.confirm_delete
    press(qtbot, dlg, Qt.Key.Key_Return)
    assert "steps" in schedules(path)
    qtbot.mouseClick(dlg.confirm_delete, Qt.MouseButton.LeftButton)
    assert schedules(path) == {}


def every_hour() -> WorkflowSchedule:
    """The schedule the tests pause and delete."""
    return WorkflowSchedule("steps", Schedule.every("1h"), input=3)
