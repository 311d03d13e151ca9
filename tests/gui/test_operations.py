"""The Run, Schedules and Tools menus in the main window, on real files."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from harvest_engine import (
    ExecutionFilter,
    RunState,
    SqliteReader,
    SqliteRuntime,
    WorkflowReplayer,
)
from harvest_gui.driving import run_until_blocked
from harvest_gui.forms.end_run import EndRunDialog
from harvest_gui.forms.signal import SignalDialog
from harvest_gui.forms.start import StartWorkflowDialog
from harvest_gui.session import WriterSession
from harvest_gui.views.diff import DiffView
from harvest_gui.views.main_window import MainWindow
from harvest_gui.views.storage import StorageView
from harvest_gui.views.time_travel import TimeTravelView
from tests.gui import form_app
from tests.gui.helpers import async_wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui


@pytest.fixture
def form_file(tmp_path: Path) -> Path:
    path = tmp_path / "ops.db"
    with SqliteRuntime.open(path) as rt:
        for wf in form_app.WORKFLOWS:
            rt.register_workflow(wf)
        rt.start_workflow_with_id("typed_order", "order-1", {"id": "A", "qty": 2})
        rt.start_workflow_with_id("plain", "plain-1", {"x": 1})
    return path


@pytest.fixture
def window(qtbot: Any, settings: Any) -> Iterator[MainWindow]:
    w = MainWindow(settings, app_module="tests.gui.form_app")
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close()


def exec_of(path: Path, workflow_id: str) -> str:
    with SqliteReader.open(path) as reader:
        runs = reader.list_executions(
            ExecutionFilter().workflow_id(workflow_id)
        ).executions
    return str(runs[0].exec_id)


def test_menus_hold_every_operation(window: MainWindow) -> None:
    ops = window.operations
    titles = [a.text() for a in window.menuBar().actions()]
    assert titles[-4:] == ["&Run", "S&chedules", "&Tools", "&Help"]
    for key in (
        "start",
        "signal",
        "query",
        "update",
        "cancel",
        "terminate",
        "auto_drive",
    ):
        assert key in ops.actions
    assert not ops.actions["signal"].isEnabled()  # nothing open yet
    ops.on_signal()
    assert window.statusBar().currentMessage().startswith("Open a file first")


def test_drive_switch_interval_and_run_until_blocked(
    qtbot: Any, qloop: Any, window: MainWindow, form_file: Path, settings: Any
) -> None:
    ops = window.operations
    order = exec_of(form_file, "order-1")

    async def body() -> None:
        assert window.open_path(form_file)
        session = window.session
        assert isinstance(session, WriterSession)
        await async_wait_until(lambda: session.driving)
        ops.update_actions()
        assert ops.actions["auto_drive"].isChecked()
        ops.actions["auto_drive"].trigger()  # off
        assert not session.driving
        window.findChild(type(ops.actions["start"]), "action_interval_250").trigger()
        assert session.drive_interval == 0.25
        assert settings.qsettings.value("drive/interval_ms") == 250
        assert window.run_list is not None
        assert window.run_list.select_exec_id(order)
        ops.update_actions()
        ops.actions["until_blocked"].trigger()
        await async_wait_until(
            lambda: (
                "waiting for signal 'approve'" in window.statusBar().currentMessage()
            )
        )
        assert not session.driving  # it stays off when it was off
        session.runtime.send_signal(order, "approve", "ok")
        ops.actions["until_idle"].trigger()
        await async_wait_until(
            lambda: window.statusBar().currentMessage().startswith("Idle")
        )
        assert session.describe(order).state == "COMPLETED"
        ops.actions["auto_drive"].trigger()  # on again
        assert session.driving
        window.close_session()  # what closing the window does (closing it here would quit the app)
        await async_wait_until(lambda: session.closed)

    qloop.run_until_complete(body())
    SqliteRuntime.open(
        form_file
    ).close()  # closing stopped the drive and freed the lock


def test_forms_and_views_open_from_the_menus_and_close_with_the_window(
    qtbot: Any, qloop: Any, window: MainWindow, form_file: Path, tmp_path: Path
) -> None:
    ops = window.operations
    order = exec_of(form_file, "order-1")

    async def body() -> None:
        assert window.open_path(form_file)
        assert window.run_list is not None
        assert window.run_list.select_exec_id(order)
        ops.update_actions()
        ops.actions["start"].trigger()
        ops.actions["signal"].trigger()
        ops.actions["time_travel"].trigger()
        ops.actions["diff"].trigger()
        ops.actions["storage"].trigger()
        kinds = [type(w) for w in ops.opened.windows]
        assert kinds == [
            StartWorkflowDialog,
            SignalDialog,
            TimeTravelView,
            DiffView,
            StorageView,
        ]
        storage = ops.opened.windows[-1]
        await async_wait_until(lambda: storage.report is not None)
        signal = ops.opened.windows[1]
        signal.payload.set_text("true")
        qtbot.mouseClick(signal.submit_button, Qt.MouseButton.LeftButton)
        assert "staged" in signal.result_view.toPlainText()
        out = ops.export_to(tmp_path / "order.json", order)
        assert out is not None
        assert (
            WorkflowReplayer([form_app.typed_order]).replay(out.read_text()).events >= 1
        )

    qloop.run_until_complete(body())
    opened = list(ops.opened.windows)
    window.close()
    assert opened
    assert not any(w.isVisible() for w in opened)


@pytest.mark.parametrize(
    ("action", "state"), [("cancel", "CANCELLED"), ("terminate", "TERMINATED")]
)
def test_run_menu_cancel_and_terminate_end_the_selected_run(
    qtbot: Any, qloop: Any, window: MainWindow, form_file: Path, action: str, state: str
) -> None:
    ops = window.operations
    plain = exec_of(form_file, "plain-1")

    async def body() -> None:
        assert window.open_path(form_file)  # writer, auto-driving
        session = window.session
        assert isinstance(session, WriterSession)
        if action == "cancel":
            # A cancel ends the run at a later drive: drive by hand, so the
            # form can be made to miss that drive (below).
            stopping = session.stop_driving()
            if stopping is not None:
                await asyncio.wait([stopping], timeout=30)
        assert window.run_list is not None
        assert window.run_list.select_exec_id(plain)
        ops.update_actions()
        assert ops.actions[action].isEnabled()
        ops.actions[action].trigger()
        dlg = ops.opened.windows[-1]
        assert isinstance(dlg, EndRunDialog)
        assert dlg.notice.isHidden()
        dlg.reason.setText("from the menu")
        dlg.confirm.setChecked(True)
        qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
        assert dlg.error_label.isHidden(), dlg.error_label.text()
        if action == "terminate":  # the form saw the run end: nothing to confirm
            assert session.describe(plain).state == state
            assert not dlg.confirm.isEnabled()
        else:
            assert session.describe(plain).state == "RUNNING"  # asked to stop
            # Ended by a drive the form did not see: a hidden form does not
            # re-read the run (it does at the session's next poll, 200 ms,
            # when shown), so its submit still offers the cancel, and the
            # engine refuses it, in words. The click comes in the same turn
            # as the show: no poll can re-read the run in between.
            dlg.hide()
            ended = await run_until_blocked(session, plain)
            assert isinstance(ended, RunState.Cancelled)
            dlg.show()
            dlg.confirm.setChecked(True)
            dlg.submit_button.click()
            assert dlg.error_label.text().startswith("Workflow not running:")
            session.refresh()  # as the next poll does: now the form knows
            assert dlg.target.closed
            assert not dlg.confirm.isEnabled()
        ops.update_actions()
        assert not ops.actions[action].isEnabled()  # the run is closed now
        window.close_session()
        await async_wait_until(lambda: session.closed, seconds=30)

    qloop.run_until_complete(body())
    with SqliteReader.open(form_file) as reader:
        assert reader.describe(plain).state == state
        assert "from the menu" in reader.load_history(plain)[-1].to_json()


def test_read_only_window_disables_driving_and_explains_forms(
    qtbot: Any, window: MainWindow, form_file: Path
) -> None:
    ops = window.operations
    assert window.open_path(form_file, read_only=True)
    assert window.run_list is not None
    window.run_list.select_exec_id(exec_of(form_file, "order-1"))
    ops.update_actions()
    assert not ops.actions["auto_drive"].isEnabled()
    assert not ops.actions["until_idle"].isEnabled()
    ops.actions["signal"].trigger()
    dlg = ops.opened.windows[-1]
    assert not dlg.submit_button.isEnabled()
    assert dlg.notice.text().startswith("Read-only:")
    assert ops._need_writer() is None
    assert window.statusBar().currentMessage().startswith("Read-only:")


def test_edit_selected_schedule(
    qtbot: Any, window: MainWindow, form_file: Path
) -> None:
    with SqliteRuntime.open(form_file) as rt:
        from harvest_engine import Schedule, WorkflowSchedule

        rt.register_workflow(form_app.plain)
        rt.upsert_schedule(WorkflowSchedule("plain", Schedule.every("5m"), input=3))
    ops = window.operations
    assert window.open_path(form_file, read_only=True)
    ops.on_edit_schedule()
    assert window.statusBar().currentMessage().startswith("Select a schedule")
    assert window.schedules is not None
    window.schedules.table.selectRow(0)
    ops.on_edit_schedule()
    editor = ops.opened.windows[-1]
    assert editor.interval.text() == "5m"
    assert editor.input.raw.toPlainText() == "3"
    assert not editor.pause_button.isEnabled()


EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def _snapshot(folder: Path) -> dict[str, str]:
    import hashlib

    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
    }


def test_read_only_window_writes_nothing_whatever_the_user_tries(
    qtbot: Any, qloop: Any, window: MainWindow, form_file: Path
) -> None:
    from harvest_engine import Schedule, WorkflowSchedule

    with SqliteRuntime.open(form_file) as rt:
        rt.register_workflow(form_app.plain)
        rt.upsert_schedule(WorkflowSchedule("plain", Schedule.every("5m"), input=3))
    folder = form_file.parent
    before = _snapshot(folder)
    before.pop("settings.ini", None)  # the window's own settings live beside the file
    ops = window.operations

    async def body() -> None:
        assert window.open_path(form_file, read_only=True)
        assert window.run_list is not None
        assert window.detail is not None
        assert window.run_list.select_exec_id(exec_of(form_file, "order-1"))
        for tab in range(window.detail.tabs.count()):
            window.detail.tabs.setCurrentIndex(tab)
        assert window.schedules is not None
        window.schedules.table.selectRow(0)
        ops.update_actions()
        for key, action in ops.actions.items():
            if (
                key != "crash_demo" and action.isEnabled()
            ):  # the demo uses a file of its own
                action.trigger()
        export = window.findChild(QFileDialog, "exportDialog")
        assert export is not None
        export.reject()  # exporting writes a file of the user's choosing, not this one
        ops.on_edit_schedule()
        ops.on_auto_drive(True)
        await ops.on_until_idle()
        for widget in ops.opened.windows:
            submit = getattr(widget, "on_submit_clicked", None)
            if submit is not None:  # as if the disabled button had been pressed anyway
                assert not widget.submit_button.isEnabled()
                submit()
        await asyncio.sleep(0.5)  # let the change polling and any timers run
        window.on_refresh()
        window.close_session()

    qloop.run_until_complete(body())
    after = _snapshot(folder)
    after.pop("settings.ini", None)
    # SQLite's own WAL read side: a reader makes an empty -wal and the -shm index if
    # they are missing, and as a reader it may not remove them. No byte of the file moves.
    assert after.pop("ops.db-wal", EMPTY_SHA256) == EMPTY_SHA256
    after.pop("ops.db-shm", None)
    assert after == before
    with SqliteReader.open(form_file) as reader:
        assert reader.describe(exec_of(form_file, "order-1")).state == "RUNNING"
        assert len(reader.list_schedules()) == 1


def _menu_commands(window: MainWindow) -> list[Any]:
    """Every command in the menu bar (choice groups and recent-file entries aside)."""
    found: list[Any] = []

    def walk(menu: Any) -> None:
        for action in menu.actions():
            if action.menu() is not None:
                if action.menu().objectName() != "recentMenu":
                    walk(action.menu())
            elif not action.isSeparator() and action.actionGroup() is None:
                found.append(action)

    for top in window.menuBar().actions():
        walk(top.menu())
    return found


def test_every_menu_command_has_its_own_shortcut(
    qtbot: Any, window: MainWindow, form_file: Path
) -> None:
    commands = [a for a in _menu_commands(window) if a.objectName() != "actionAboutQt"]
    assert len(commands) >= 27
    missing = [a.text() for a in commands if a.shortcut().isEmpty()]
    assert missing == []
    keys = [a.shortcut().toString() for a in commands]
    assert len(keys) == len(set(keys)), keys
    assert (
        window.own_actions.quit.shortcut().toString() == "Ctrl+Q"
    )  # even where Qt binds none
    ops = window.operations
    assert window.open_path(form_file)
    ctrl_shift = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    qtbot.keyClick(window, Qt.Key.Key_P, ctrl_shift)
    assert type(ops.opened.windows[-1]).__name__ == "PurgeDialog"
    window.activateWindow()
    qtbot.keyClick(window, Qt.Key.Key_E, ctrl_shift)
    assert window.statusBar().currentMessage().startswith("Select a schedule")
    assert window.run_list is not None
    window.run_list.select_exec_id(
        exec_of(form_file, "order-1")
    )  # no menu opened since
    qtbot.keyClick(window, Qt.Key.Key_S, ctrl_shift)
    assert isinstance(ops.opened.windows[-1], SignalDialog)
    qtbot.keyClick(window, Qt.Key.Key_F1)
    assert window.last_dialog is not None
    assert window.last_dialog.objectName() == "aboutBox"
    window.last_dialog.accept()
