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


# -- focus on open (issue 31 #6) ---------------------------------------------------------


@pytest.fixture
def runs_writer(tmp_path: Path) -> Iterator[WriterSession]:
    """A file with waiting runs, opened as its writer with their code registered."""
    from tests.gui.helpers import make_runs

    p = tmp_path / "runs.db"
    make_runs(p, 2)
    session = WriterSession.open(p, "tests.gui.helpers")
    yield session
    session.close()


def first_exec_id(session: WriterSession) -> str:
    from harvest_engine import ExecutionFilter

    return str(session.list_executions(ExecutionFilter()).executions[0].exec_id)


@pytest.mark.parametrize("action", ["cancel", "terminate"])
def test_end_run_form_opens_typing_into_its_reason_and_space_does_not_close_it(
    qtbot: Any, runs_writer: WriterSession, action: str
) -> None:
    from harvest_gui.forms.end_run import EndRunDialog

    dlg = shown(qtbot, EndRunDialog(runs_writer, first_exec_id(runs_writer), action))
    assert QApplication.focusWidget() is dlg.reason
    for key in (Qt.Key.Key_N, Qt.Key.Key_O, Qt.Key.Key_Space, Qt.Key.Key_O):
        press(qtbot, dlg, key)
    assert dlg.reason.text() == "no o"
    assert dlg.isVisible()


def test_each_form_opens_with_the_focus_in_its_first_field(
    qtbot: Any, runs_writer: WriterSession
) -> None:
    from harvest_gui.forms.handler_call import QueryDialog
    from harvest_gui.forms.purge import PurgeDialog
    from harvest_gui.forms.signal import SignalDialog
    from harvest_gui.forms.start import StartWorkflowDialog

    exec_id = first_exec_id(runs_writer)
    for make, first in (
        (lambda: StartWorkflowDialog(runs_writer), lambda d: d.workflow),
        (lambda: SignalDialog(runs_writer, exec_id), lambda d: d.name),
        (lambda: QueryDialog(runs_writer, exec_id), lambda d: d.name),
        (lambda: PurgeDialog(runs_writer), lambda d: d.amount),
    ):
        dlg = shown(qtbot, make())
        focused = QApplication.focusWidget()
        field = first(dlg)
        assert focused is field or field.isAncestorOf(focused), (
            type(dlg).__name__,
            focused,
        )
        assert focused is not dlg.close_button
        dlg.close()


def test_the_editor_opens_on_the_chosen_kind_and_asks_on_a_row_of_its_own(
    qtbot: Any, writer: WriterSession, path: Path
) -> None:
    writer.runtime.upsert_schedule(every_hour())
    dlg = shown(qtbot, ScheduleEditorDialog(writer, schedules(path)["steps"]))
    # Not on the unchecked "Cron" choice, where Space would switch the kind.
    assert QApplication.focusWidget() is dlg.interval_radio
    press(qtbot, dlg, Qt.Key.Key_Space)
    assert dlg.interval_radio.isChecked()
    qtbot.mouseClick(dlg.delete_button, Qt.MouseButton.LeftButton)
    question = dlg.confirm_delete
    assert question.text() == "Yes, delete the schedule of steps"
    # The whole question shows: it is not squeezed beside the other buttons.
    assert question.width() >= question.sizeHint().width()
    assert question.y() > dlg.delete_button.y()


def test_tab_from_the_workflow_lands_in_the_input_and_a_space_types_a_space(
    qtbot: Any, runs_writer: WriterSession
) -> None:
    """Tab then typing types into the input (found under Xvfb).

    Tab went to "Fill in the input of the last run", whose Space pressed it,
    so the typed JSON was dropped and the last run's input was started.
    """
    from harvest_gui.forms.start import StartWorkflowDialog

    dlg = shown(qtbot, StartWorkflowDialog(runs_writer))
    dlg.workflow.setCurrentText("waits_for_go")
    assert dlg.input.template_button.isVisibleTo(dlg)  # the last run's input offered
    dlg.workflow.setFocus()
    press(qtbot, dlg, Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is dlg.input.raw
    for key in (Qt.Key.Key_1, Qt.Key.Key_Space, Qt.Key.Key_2):
        press(qtbot, dlg, key)
    assert dlg.input.raw.toPlainText() == "1 2"
    press(qtbot, dlg, Qt.Key.Key_Tab)  # the offer comes after the box
    assert QApplication.focusWidget() is dlg.input.template_button
    dlg.close()
