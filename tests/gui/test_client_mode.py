"""Client mode: a window acting on a file another process serves, through HarvestClient."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QPushButton

from harvest_gui.client_session import ClientSession
from harvest_gui.forms.commands import CLIENT_REASON
from harvest_gui.forms.purge import PurgeDialog
from harvest_gui.forms.signal import SignalDialog
from harvest_gui.forms.start import StartWorkflowDialog
from harvest_gui.views.main_window import MainWindow
from tests.gui.helpers import async_wait_until, make_runs, serving

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A file with one run waiting for "go", served by another process."""
    path = tmp_path / "served.db"
    (waiting,) = make_runs(path, 1)
    with serving(path):
        yield path, waiting


@pytest.fixture
def window(qtbot: Any, settings: Any) -> Iterator[MainWindow]:
    w = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.close()


def shown(qtbot: Any, dialog: Any) -> Any:
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def test_a_served_file_opens_in_client_mode_and_the_forms_act_through_the_server(
    qtbot: Any, qloop: Any, window: MainWindow, served: Any
) -> None:
    path, waiting = served
    assert not window.open_path(path)  # the server holds the lock
    box = window.last_dialog
    assert box is not None
    client_button = box.findChild(QPushButton, "openAsClient")
    assert box.defaultButton() is client_button
    assert box.button(QMessageBox.StandardButton.Open).text() == "Open read-only"
    client_button.click()
    session = window.session
    assert isinstance(session, ClientSession)
    assert window.status.mode.text() == "client"
    assert window.windowTitle().endswith("served.db (client)")
    assert "serving process" in window.status.lock.text()

    signal = shown(qtbot, SignalDialog(session, waiting))
    start = shown(qtbot, StartWorkflowDialog(session))
    purge = shown(qtbot, PurgeDialog(session))
    assert purge.notice.text() == CLIENT_REASON
    assert not purge.submit_button.isEnabled()
    started: list[Any] = []
    start.succeeded.connect(started.append)

    async def body() -> None:
        signal.payload.set_text('"from the window"')
        assert signal.submit_button.isEnabled()
        qtbot.mouseClick(signal.submit_button, Qt.MouseButton.LeftButton)
        await async_wait_until(lambda: "staged" in signal.result_view.toPlainText())
        assert signal.result_view.toPlainText().startswith("Signal 'go' staged")
        await async_wait_until(lambda: session.describe(waiting).state == "COMPLETED")
        assert session.describe(waiting).output.value == "from the window"

        start.workflow.setCurrentText("quick")
        start.input.set_text("7")
        qtbot.mouseClick(start.submit_button, Qt.MouseButton.LeftButton)
        await async_wait_until(lambda: bool(started))
        exec_id = str(started[0].exec_id)
        # Named by its workflow id (its exec id, none was given) and its workflow.
        assert start.result_view.toPlainText().startswith(
            f"Started a new run: {exec_id} · quick ("
        )
        await async_wait_until(lambda: session.describe(exec_id).state == "COMPLETED")

    qloop.run_until_complete(body())


def test_a_command_nobody_serves_times_out_in_words(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    path = tmp_path / "unserved.db"
    (waiting,) = make_runs(path, 1)
    session = ClientSession.open(path)
    try:
        dialog = shown(qtbot, SignalDialog(session, waiting))
        dialog.name.setCurrentText("go")  # no code loaded: no suggestions
        dialog.payload.set_text("1")
        assert dialog.submit_button.isEnabled()
        session.client_timeout = "200ms"

        async def body() -> None:
            qtbot.mouseClick(dialog.submit_button, Qt.MouseButton.LeftButton)
            await async_wait_until(lambda: dialog.error_label.isVisible())

        qloop.run_until_complete(body())
        assert "no process serves" in dialog.error_label.text()
        assert dialog.submit_button.isEnabled()
    finally:
        session.close()
