"""The start form remembers the last workflow started and selects the run it started (issue 31 #13)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt

from harvest_gui.forms.start import StartWorkflowDialog
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


def test_start_preselects_the_last_workflow_and_selects_the_new_run(
    qtbot: Any, window: MainWindow, db_file: Path, settings: Any
) -> None:
    assert window.open_path(db_file)
    assert window.run_list is not None
    ops = window.operations
    ops.actions["start"].trigger()
    form = ops.opened.forms["start"]
    assert isinstance(form, StartWorkflowDialog)
    assert form.workflow.currentText() == "quick"  # nothing remembered: the first
    form.workflow.setCurrentText("waits_for_go")
    form.input.set_text('{"from": "the form"}')
    qtbot.mouseClick(form.submit_button, Qt.MouseButton.LeftButton)
    assert form.error_label.isHidden(), form.error_label.text()
    text = form.result_view.toPlainText()
    assert text.startswith("Started a new run:")
    # The new run is the selected one in the list (not behind a "new runs" bar).
    selected = window.run_list.selected_exec_id()
    assert selected is not None
    assert selected in text
    assert window.detail is not None
    assert window.detail.exec_id == selected
    assert window.session is not None
    assert window.session.describe(selected).input.value == {"from": "the form"}
    form.close()
    # Reopened (and in a later window: the choice is in the settings), it offers it first.
    ops.actions["start"].trigger()
    again = ops.opened.forms["start"]
    assert again is not form
    assert again.workflow.currentText() == "waits_for_go"
    again.close()
    later = StartWorkflowDialog(window.session, settings=settings)
    qtbot.addWidget(later)
    assert later.workflow.currentText() == "waits_for_go"
