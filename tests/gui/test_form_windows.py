"""Run forms in the window: one per kind, following the selection, naming runs as users do (issue 31)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from harvest_engine import ExecutionFilter, SqliteReader
from harvest_gui.forms.end_run import EndRunDialog
from harvest_gui.views.diff import DiffView
from harvest_gui.views.main_window import MainWindow

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
    w.close()


def runs_of(path: Path) -> dict[str, tuple[str, str]]:
    """Workflow id -> (exec id, state)."""
    with SqliteReader.open(path) as reader:
        page = reader.list_executions(ExecutionFilter())
    return {r.workflow_id: (str(r.exec_id), str(r.state)) for r in page.executions}


def select(window: MainWindow, exec_id: str) -> None:
    assert window.run_list is not None
    assert window.run_list.select_exec_id(exec_id)


def test_a_form_reopened_is_raised_not_copied_and_follows_the_selected_run(
    qtbot: Any, window: MainWindow, db_file: Path
) -> None:
    runs = runs_of(db_file)  # wf-00000, wf-00001 completed; the others wait
    assert window.open_path(db_file, read_only=True)
    ops = window.operations
    select(window, runs["wf-00002"][0])
    ops.actions["signal"].trigger()
    first = ops.opened.forms["signal"]
    ops.actions["signal"].trigger()
    assert ops.opened.forms["signal"] is first
    assert [type(w).__name__ for w in ops.opened.windows].count("SignalDialog") == 1
    # Parented and transient: it stays above the main window, never behind it.
    assert first.parentWidget() is window
    assert first.windowHandle().transientParent() is window.windowHandle()
    assert first.isWindow()
    # It says it follows the selection, and does.
    assert first.follows.isVisible()
    assert "Follows the run selected in the main window" in first.follows.text()
    select(window, runs["wf-00003"][0])
    assert first.exec_id == runs["wf-00003"][0]
    assert first.run_line.text().startswith("wf-00003 · waits_for_go")
    assert first.windowTitle() == "Send signal: wf-00003"
    first.close()


def test_retargeting_clears_a_given_confirmation(
    qtbot: Any, window: MainWindow, db_file: Path
) -> None:
    runs = runs_of(db_file)
    assert window.open_path(db_file)
    ops = window.operations
    select(window, runs["wf-00002"][0])
    ops.actions["terminate"].trigger()
    dlg = ops.opened.forms["terminate"]
    assert isinstance(dlg, EndRunDialog)
    dlg.confirm.setChecked(True)
    assert dlg.submit_button.isEnabled()
    select(window, runs["wf-00004"][0])
    assert dlg.exec_id == runs["wf-00004"][0]
    assert not dlg.confirm.isChecked()
    assert not dlg.submit_button.isEnabled()
    dlg.close()


def test_closing_the_file_closes_its_forms(
    qtbot: Any, window: MainWindow, db_file: Path
) -> None:
    runs = runs_of(db_file)
    assert window.open_path(db_file, read_only=True)
    select(window, runs["wf-00002"][0])
    window.operations.actions["query"].trigger()
    dlg = window.operations.opened.forms["query"]
    assert dlg.isVisible()
    window.close_session()
    assert not dlg.isVisible()


# -- closed runs and run names (issue 31 #8) ---------------------------------------------


def test_cancel_and_terminate_are_off_for_a_closed_run_and_its_form_says_why(
    qtbot: Any, window: MainWindow, db_file: Path
) -> None:
    runs = runs_of(db_file)
    assert window.open_path(db_file)
    ops = window.operations
    select(window, runs["wf-00002"][0])
    assert ops.actions["cancel"].isEnabled()
    assert ops.actions["terminate"].isEnabled()
    done, state = runs["wf-00000"]
    assert state == "COMPLETED"
    select(window, done)
    assert not ops.actions["cancel"].isEnabled()
    assert not ops.actions["terminate"].isEnabled()
    assert "closed" in ops.actions["cancel"].toolTip()
    # A form opened on a run that closes (or reached by retargeting) refuses up front.
    dlg = EndRunDialog(window.session, done, "terminate")
    qtbot.addWidget(dlg)
    dlg.show()
    assert not dlg.confirm.isEnabled()
    assert not dlg.submit_button.isEnabled()
    assert dlg.closed_note.isVisible()
    assert dlg.closed_note.text() == (
        "This run is closed (COMPLETED): there is nothing to terminate."
    )
    dlg.confirm.setChecked(True)  # even when forced
    assert not dlg.submit_button.isEnabled()
    dlg.close()


def test_forms_and_diff_pickers_name_runs_by_workflow_id_and_workflow(
    qtbot: Any, window: MainWindow, db_file: Path
) -> None:
    runs = runs_of(db_file)
    exec_id = runs["wf-00003"][0]
    assert window.open_path(db_file)
    select(window, exec_id)
    ops = window.operations
    for key in ("signal", "query", "update", "cancel"):
        ops.actions[key].trigger()
        form = ops.opened.windows[-1]
        text = form.run_line.text()
        assert text.startswith("wf-00003 · waits_for_go"), (key, text)
        assert exec_id in text  # still there, second
        form.close()
    view = DiffView(window.session, exec_id)
    qtbot.addWidget(view)
    view.show()
    assert view.left.currentText().startswith("wf-00003 · waits_for_go")
    assert view.picked(view.left) == exec_id
    names = [view.right.itemText(i) for i in range(view.right.count())]
    assert all(n.startswith("wf-") for n in names)
    qtbot.mouseClick(view.compare_button, Qt.MouseButton.LeftButton)
    assert not view.summary.text().startswith("Execution not found")
    view.close()
    assert QApplication.activeModalWidget() is None


def test_a_run_that_closes_while_its_end_form_is_open_is_said_at_once(
    qtbot: Any, qloop: Any, db_file: Path
) -> None:
    from harvest_gui.session import WriterSession

    runs = runs_of(db_file)
    exec_id = runs["wf-00002"][0]
    session = WriterSession.open(db_file, "tests.gui.helpers")
    try:
        dlg = EndRunDialog(session, exec_id, "cancel")
        qtbot.addWidget(dlg)
        dlg.show()
        dlg.confirm.setChecked(True)
        assert dlg.submit_button.isEnabled()
        session.runtime.send_signal(exec_id, "go", "done")
        qloop.run_until_complete(session.runtime.run_until_idle())
        session.refresh()  # what the poll does when the file changed
        assert dlg.run_line.text().startswith("wf-00002 · waits_for_go (COMPLETED")
        assert not dlg.confirm.isChecked()
        assert not dlg.submit_button.isEnabled()
        assert dlg.closed_note.isVisible()
        dlg.close()
    finally:
        session.close()
