"""File ▸ Load workflow code…, remembered per file; client mode starts by name without code (issue 31 #2)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt

from harvest_gui.client_session import ClientSession
from harvest_gui.forms.start import StartWorkflowDialog
from harvest_gui.session import ReaderSession, WriterSession
from harvest_gui.views.main_window import MainWindow
from tests.gui.helpers import async_wait_until
from tests.gui.test_client_mode import served

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui
__all__ = ["served"]  # the fixture, shared with the client-mode tests


@pytest.fixture
def window(qtbot: Any, settings: Any) -> Iterator[MainWindow]:
    w = MainWindow(settings)  # no --app: the code comes from the menu
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close()


def load_through_the_menu(qtbot: Any, window: MainWindow, spec: str) -> Any:
    window.own_actions.load_code.trigger()
    dialog = window.opener.code_dialog
    assert dialog is not None
    assert dialog.isVisible()
    dialog.spec.clear()
    qtbot.keyClicks(dialog.spec, spec)
    qtbot.mouseClick(dialog.submit_button, Qt.MouseButton.LeftButton)
    return dialog


def test_code_loaded_from_the_menu_is_registered_and_loaded_again_with_the_file(
    qtbot: Any, qloop: Any, window: MainWindow, db_file: Path, settings: Any
) -> None:
    assert window.open_path(db_file)
    session = window.session
    assert isinstance(session, WriterSession)
    assert session.code_module is None
    before = StartWorkflowDialog(session)
    qtbot.addWidget(before)
    assert "Load workflow code" in before.notice.text()  # says where code comes from
    assert not before.submit_button.isEnabled()

    async def load() -> Any:  # on the running loop, as in the app
        return load_through_the_menu(qtbot, window, "tests.gui.helpers")

    dialog = qloop.run_until_complete(load())
    assert dialog.error_label.isHidden(), dialog.error_label.text()
    assert dialog.result_view.toPlainText() == (
        "Loaded tests.gui.helpers: quick, waits_for_go. Remembered for runs.db."
    )
    assert sorted(session.runtime.registry.workflows) == ["quick", "waits_for_go"]
    assert session.driving  # runs that waited for their code go on
    assert settings.code_for(db_file) == "tests.gui.helpers"
    window.close_session()
    assert not dialog.isVisible()  # it was about that file
    qloop.run_until_complete(async_wait_until(lambda: session.closed))
    window.open_path(db_file, read_only=True)
    again = window.session
    assert isinstance(again, ReaderSession)
    assert again.code_module == "tests.gui.helpers"
    assert sorted(w.name for w in again.workflows) == ["quick", "waits_for_go"]


def test_a_py_file_loads_and_bad_code_is_said_in_the_dialog(
    qtbot: Any, window: MainWindow, db_file: Path, tmp_path: Path, settings: Any
) -> None:
    code = tmp_path / "my_flows.py"
    code.write_text(
        textwrap.dedent(
            """
            from harvest_engine import WorkflowContext, workflow

            @workflow
            async def from_a_file(ctx: WorkflowContext, arg: object) -> object:
                return arg

            WORKFLOWS = [from_a_file]
            """
        )
    )
    assert window.open_path(db_file, read_only=True)
    dialog = load_through_the_menu(qtbot, window, "no_such_module_here")
    assert "no_such_module_here" in dialog.error_label.text()
    assert settings.code_for(db_file) is None  # nothing remembered
    dialog.spec.setText(str(code))
    qtbot.mouseClick(dialog.submit_button, Qt.MouseButton.LeftButton)
    assert dialog.error_label.isHidden(), dialog.error_label.text()
    assert "from_a_file" in dialog.result_view.toPlainText()
    assert window.session is not None
    assert [w.name for w in window.session.workflows] == ["from_a_file"]
    assert settings.code_for(db_file) == str(code)
    window.own_actions.load_code.trigger()  # one dialog: raised, not copied
    assert window.opener.code_dialog is dialog
    dialog.close()


def test_client_mode_starts_a_workflow_by_name_without_code(
    qtbot: Any, qloop: Any, window: MainWindow, served: Any
) -> None:
    path, _waiting = served
    assert window.open_path(path, client=True)
    session = window.session
    assert isinstance(session, ClientSession)
    assert session.code is None
    form = StartWorkflowDialog(session)
    qtbot.addWidget(form)
    form.show()
    assert form.disabled_reason is None
    assert form.workflow.isEditable()
    assert "waits_for_go" in [
        form.workflow.itemText(i) for i in range(form.workflow.count())
    ]
    assert "serving process runs it" in form.notice.text()
    form.workflow.setCurrentText("")
    qtbot.keyClicks(form.workflow.lineEdit(), "quick")
    form.input.set_text("41")
    assert form.submit_button.isEnabled()
    started: list[Any] = []
    form.succeeded.connect(started.append)

    async def body() -> None:
        qtbot.mouseClick(form.submit_button, Qt.MouseButton.LeftButton)
        await async_wait_until(lambda: bool(started), seconds=15)
        exec_id = str(started[0].exec_id)
        await async_wait_until(
            lambda: session.describe(exec_id).state == "COMPLETED", seconds=15
        )
        assert session.describe(exec_id).output.value == 41

    qloop.run_until_complete(body())
    form.close()
