"""Client mode's status bar follows the serving process's heartbeat: served, then gone."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt

from harvest_gui.client_session import ClientSession
from harvest_gui.forms.signal import SignalDialog
from harvest_gui.views.main_window import MainWindow
from tests.gui.helpers import async_wait_until, make_runs, serving
from tests.gui.helpers import stop_serving as stop

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Iterator

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A file served by another process; the test may stop it (`stop`)."""
    path = tmp_path / "served.db"
    (waiting,) = make_runs(path, 1)
    (tmp_path / "waiting.txt").write_text(waiting)
    with serving(path) as proc:
        yield path, proc


def test_the_status_bar_shows_the_heartbeat_age_and_notices_the_server_is_gone(
    qtbot: Any, settings: Any, server: Any
) -> None:
    path, proc = server
    window = MainWindow(settings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    assert window.open_path(path, client=True)
    assert isinstance(window.session, ClientSession)
    serving = window.status.serving
    qtbot.waitUntil(lambda: serving.text().startswith("served (beat "), timeout=5000)
    assert serving.isVisible()
    assert serving.text().endswith("s ago)")

    stop(proc)  # the server goes; the field says so without any command sent
    qtbot.waitUntil(
        lambda: serving.text().startswith("not served: no beat for "), timeout=8000
    )

    def seconds() -> int:
        return int(serving.text().removeprefix("not served: no beat for ")[:-1])

    first = seconds()
    # Refreshed each second with no event from the window: the age grows.
    qtbot.waitUntil(lambda: seconds() >= first + 2, timeout=5000)
    window.close()


def test_the_heartbeat_field_is_hidden_when_this_window_serves_the_file(
    qtbot: Any, settings: Any, tmp_path: Path
) -> None:
    path = tmp_path / "own.db"
    make_runs(path, 1)
    window = MainWindow(settings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    assert window.open_path(path)
    assert window.session is not None
    assert window.session.mode != "client"
    assert window.status.serving.isHidden()
    assert window.status.serving.text() == ""
    window.close()


def test_a_command_shows_its_id_while_out_and_is_withdrawn_once_the_server_is_gone(
    qtbot: Any, qloop: Any, server: Any
) -> None:
    path, proc = server
    waiting = (path.parent / "waiting.txt").read_text()
    session = ClientSession.open(path)
    try:
        dialog = SignalDialog(session, waiting)
        qtbot.addWidget(dialog)
        dialog.show()
        dialog.name.setCurrentText("go")
        dialog.payload.set_text("1")
        stop(proc)  # the server goes before the command is sent
        pending = dialog.pending

        async def body() -> None:
            qtbot.mouseClick(dialog.submit_button, Qt.MouseButton.LeftButton)
            await async_wait_until(lambda: pending.isVisible())
            assert pending.spinner.isVisible()
            assert not pending.withdraw_button.isVisible()
            command_id = pending.command_id
            assert command_id is not None
            assert pending.label.text() == (
                f"Waiting for the serving process… command {command_id}"
            )
            await async_wait_until(lambda: pending.withdraw_button.isVisible())

        qloop.run_until_complete(body())
        command_id = pending.command_id
        assert command_id is not None
        assert "no process serves" in dialog.error_label.text()
        assert not pending.spinner.isVisible()
        assert command_id in pending.label.text()
        assert session.client.command_applied(command_id) is False  # still queued
        qtbot.mouseClick(pending.withdraw_button, Qt.MouseButton.LeftButton)
        assert pending.label.text() == f"Withdrawn: command {command_id} will not run."
        assert session.client.command_applied(command_id) is None  # gone
    finally:
        session.close()


def test_a_served_command_hides_its_indicator_once_the_reply_comes(
    qtbot: Any, qloop: Any, server: Any
) -> None:
    path, _proc = server
    waiting = (path.parent / "waiting.txt").read_text()
    session = ClientSession.open(path)
    try:
        dialog = SignalDialog(session, waiting)
        qtbot.addWidget(dialog)
        dialog.show()
        dialog.name.setCurrentText("go")
        dialog.payload.set_text('"done"')

        async def body() -> None:
            qtbot.mouseClick(dialog.submit_button, Qt.MouseButton.LeftButton)
            await async_wait_until(lambda: "staged" in dialog.result_view.toPlainText())

        qloop.run_until_complete(body())
        assert session.last_command_id is not None
        assert session.last_command_id.startswith("gui-")
        assert session.client.command_applied(session.last_command_id) is True
        assert dialog.pending.isHidden()
    finally:
        session.close()
