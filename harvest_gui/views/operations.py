"""Operations: the Run, Schedules and Tools menus that act on the open file through the forms."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QStandardPaths, Qt
from PySide6.QtWidgets import QFileDialog

from harvest_gui import driving
from harvest_gui.async_bridge import async_slot
from harvest_gui.forms.commands import READ_ONLY_REASON
from harvest_gui.forms.end_run import EndRunDialog
from harvest_gui.forms.error_text import describe_error
from harvest_gui.forms.handler_call import QueryDialog, UpdateDialog
from harvest_gui.forms.purge import PurgeDialog
from harvest_gui.forms.schedule_editor import ScheduleEditorDialog
from harvest_gui.forms.signal import SignalDialog
from harvest_gui.forms.start import StartWorkflowDialog
from harvest_gui.inspect.export import export_history
from harvest_gui.session import WriterSession
from harvest_gui.views import repair_actions
from harvest_gui.views.determinism import DeterminismView
from harvest_gui.views.diff import DiffView
from harvest_gui.views.form_windows import FormWindows
from harvest_gui.views.operation_menus import build_menus
from harvest_gui.views.storage import StorageView
from harvest_gui.views.time_travel import TimeTravelView

if TYPE_CHECKING:
    from PySide6.QtGui import QAction

    from harvest_gui.views.window_host import WindowHost

INTERVAL_KEY = "drive/interval_ms"


class Operations(QObject):
    """Adds the acting menus to the inspector window; their forms open through `opened`.

    Every command is a `QAction` with a shortcut; one that does not apply
    (no run selected, read-only file) says why in the status bar.

    Args:
        host: the inspector window.

    """

    def __init__(self, host: WindowHost) -> None:
        super().__init__(host.window())
        self.host = host
        self.window = host.window()
        """The window as a widget: parent of the forms and views opened from here."""
        self.setObjectName("operations")
        self.opened = FormWindows(host)
        """The forms and views opened from here, one of each kind."""
        self.menus = build_menus(self.window, self, self.interval_ms())
        self.actions: dict[str, QAction] = self.menus.actions
        bar = host.menuBar()
        help_action = bar.actions()[-1] if bar.actions() else None
        for menu in (self.menus.run, self.menus.schedules, self.menus.tools):
            menu.aboutToShow.connect(self.update_actions)
            if help_action is not None:
                bar.insertMenu(help_action, menu)
            else:
                bar.addMenu(menu)
        host.closed.connect(self.opened.close_windows)
        # Shortcuts fire without the menu being shown, so the actions must follow the
        # open file and the selected run as they change, not only on aboutToShow.
        host.context_changed.connect(self.update_actions)
        host.context_changed.connect(self.opened.follow_selection)
        self.update_actions()

    # -- state ------------------------------------------------------------------------------

    @property
    def session(self) -> Any:
        """The window's open session, or None."""
        return self.host.session

    @property
    def exec_id(self) -> str | None:
        """The run selected in the window, or None."""
        detail = self.host.detail
        return None if detail is None else detail.exec_id

    def interval_ms(self) -> int:
        """The remembered auto-drive tick."""
        value = self.host.settings.qsettings.value(
            INTERVAL_KEY, driving.DEFAULT_INTERVAL_MS
        )
        if not isinstance(value, int | float | str):  # QSettings reads back `object`
            return driving.DEFAULT_INTERVAL_MS
        try:
            return int(value)
        except ValueError:
            return driving.DEFAULT_INTERVAL_MS

    def update_actions(self) -> None:
        """Enable what applies to the open file and the selected run."""
        has = self.session is not None
        writer = isinstance(self.session, WriterSession)
        run = has and self.exec_id is not None
        tip = "" if writer or not has else READ_ONLY_REASON
        for key in (
            "start",
            "new_schedule",
            "edit_schedule",
            "purge",
            "cancel_many",
            "terminate_many",
            "pause_many",
            "unpause_many",
            "signal_many",
            "reset_many",
        ):
            self.actions[key].setEnabled(has)
        for key in ("signal", "query", "update", "determinism"):
            self.actions[key].setEnabled(run)
        closed = run and self._selected_closed()
        for key in ("cancel", "terminate", "pause", "unpause"):
            self.actions[key].setEnabled(run and not closed)
            self.actions[key].setToolTip(
                "The selected run is closed: there is nothing to end." if closed else ""
            )
        for key in ("time_travel", "diff", "export", "reset", "fork"):
            self.actions[key].setEnabled(run)
        for key in ("auto_drive", "until_idle"):
            self.actions[key].setEnabled(writer)
            self.actions[key].setToolTip(tip)
        self.actions["until_blocked"].setEnabled(writer and run)
        self.actions["storage"].setEnabled(has)
        self.actions["auto_drive"].setChecked(writer and bool(self.session.driving))
        if writer:
            driving.set_interval(self.session, self.interval_ms())

    def _selected_closed(self) -> bool:
        """Whether the selected run has closed (cancel and terminate do not apply)."""
        if self.exec_id is None:
            return False
        try:
            return self.session.describe(self.exec_id).closed_at is not None
        except Exception:  # purged or damaged: the form says so when opened
            return False

    def say(self, text: str, ms: int = 6000) -> None:
        """A line in the status bar."""
        self.host.status.say(text, ms)

    def _need_run(self) -> str | None:
        if self.session is None:
            self.say("Open a file first (Ctrl+O).")
            return None
        if self.exec_id is None:
            self.say("Select a run in the list first.")
            return None
        return self.exec_id

    def _need_writer(self) -> WriterSession | None:
        if self.session is None:
            self.say("Open a file first (Ctrl+O).")
            return None
        if not isinstance(self.session, WriterSession):
            self.say(READ_ONLY_REASON, 10000)
            return None
        return self.session

    # -- run commands -----------------------------------------------------------------------

    def on_start(self) -> None:
        """Run ▸ Start workflow."""
        if self.session is None:
            return
        existing = self.opened.forms.get("start")
        if existing is not None and existing.isVisible():
            self.opened.open_form("start", lambda: existing)
            return
        form = StartWorkflowDialog(self.session, settings=self.host.settings)
        self.opened.open_form("start", lambda: form)
        form.succeeded.connect(self.on_started)

    def on_started(self, outcome: Any) -> None:
        """Select the run a start made (or attached to): the form's link to it."""
        self.opened.on_changed()
        self.host.on_open_run(str(outcome.exec_id))

    def on_signal(self) -> None:
        """Run ▸ Send signal."""
        if (exec_id := self._need_run()) is not None:
            self.opened.open_form(
                "signal", lambda: SignalDialog(self.session, exec_id), exec_id
            )

    def on_query(self) -> None:
        """Run ▸ Run query."""
        if (exec_id := self._need_run()) is not None:
            self.opened.open_form(
                "query", lambda: QueryDialog(self.session, exec_id), exec_id
            )

    def on_update(self) -> None:
        """Run ▸ Run update."""
        if (exec_id := self._need_run()) is not None:
            self.opened.open_form(
                "update", lambda: UpdateDialog(self.session, exec_id), exec_id
            )

    def on_end(self, action: str) -> None:
        """Run ▸ Cancel / Terminate."""
        if (exec_id := self._need_run()) is not None:
            self.opened.open_form(
                action, lambda: EndRunDialog(self.session, exec_id, action), exec_id
            )

    def on_reset(self) -> None:
        """Run ▸ Reset run…: to the event selected in the History tab (else the default point)."""
        if (exec_id := self._need_run()) is not None:
            repair_actions.open_reset(self, exec_id)

    def on_fork(self) -> None:
        """Run ▸ Fork run from a step…."""
        if (exec_id := self._need_run()) is not None:
            repair_actions.open_fork(self, exec_id)

    def on_bulk(self, action: str) -> None:
        """Run ▸ Runs matching the filter ▸ Cancel / Terminate / Pause / Unpause / Signal / Reset…."""
        repair_actions.open_bulk(self, action)

    def on_auto_drive(self, on: bool) -> None:
        """Run ▸ Auto-drive."""
        session = self._need_writer()
        if session is None:
            self.actions["auto_drive"].setChecked(False)
            return
        driving.set_interval(session, self.interval_ms())
        driving.set_auto_drive(session, on)
        self.say("Auto-drive on" if on else "Auto-drive off: runs wait until driven")

    def on_interval(self, ms: int) -> None:
        """Run ▸ Auto-drive interval (remembered)."""
        self.host.settings.qsettings.setValue(INTERVAL_KEY, ms)
        if isinstance(self.session, WriterSession):
            driving.set_interval(self.session, ms)
        self.say(f"Auto-drive interval: {ms} ms")

    @async_slot()
    async def on_until_idle(self) -> None:
        """Run ▸ Run until idle."""
        session = self._need_writer()
        if session is None:
            return
        self.say("Driving until idle…", 0)
        try:
            await driving.run_until_idle(session)
        except Exception as exc:  # one failing run: said in words, the window stays
            self.say(f"Run until idle stopped: {describe_error(exc)}", 10000)
            return
        self.say("Idle: no run has anything ready to do.")

    @async_slot()
    async def on_until_blocked(self) -> None:
        """Run ▸ Run until blocked (the selected run)."""
        session = self._need_writer()
        exec_id = self._need_run() if session is not None else None
        if session is None or exec_id is None:
            return
        self.say(f"Driving {exec_id}…", 0)
        try:
            state = await driving.run_until_blocked(session, exec_id)
        except Exception as exc:  # shown in words
            self.say(f"Run until blocked stopped: {describe_error(exc)}", 10000)
            return
        self.say(f"{exec_id}: {driving.state_text(state)}", 10000)

    def on_determinism(self) -> None:
        """Run ▸ Check determinism."""
        if (exec_id := self._need_run()) is not None:
            self.opened.open_form(
                "determinism",
                lambda: DeterminismView(self.session, exec_id),
                exec_id,
            )

    def on_time_travel(self) -> None:
        """Run ▸ Time travel."""
        if (exec_id := self._need_run()) is not None:
            self.opened.open_form(
                "time_travel", lambda: self._time_travel(exec_id), exec_id
            )

    def _time_travel(self, exec_id: str) -> TimeTravelView:
        view = TimeTravelView(self.session, exec_id)
        view.reset_requested.connect(
            lambda seq: repair_actions.open_reset_at(self, view.exec_id, seq)
        )
        return view

    def on_diff(self) -> None:
        """Run ▸ Diff with another run."""
        if (exec_id := self._need_run()) is not None:
            self.opened.open_form(
                "diff", lambda: DiffView(self.session, exec_id), exec_id
            )

    def on_export(self) -> None:
        """Run ▸ Export history: pick a file (non-modal), then write it."""
        exec_id = self._need_run()
        if exec_id is None:
            return
        dialog = QFileDialog(self.window, "Export history")
        dialog.setObjectName("exportDialog")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setNameFilter("JSON files (*.json)")
        dialog.setDefaultSuffix("json")
        dialog.selectFile(f"{exec_id}.history.json")
        dialog.fileSelected.connect(lambda p: self.export_to(Path(p), exec_id))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()

    def export_to(self, path: Path, exec_id: str) -> Path | None:
        """Write run `exec_id`'s history to `path`."""
        try:
            detail = self.session.describe(exec_id)
            events = self.session.load_history(exec_id)
            out = export_history(
                path, events, exec_id=exec_id, workflow_name=detail.workflow_name
            )
        except Exception as exc:  # a purged run or an unwritable folder, in words
            self.say(f"Export failed: {describe_error(exc)}", 10000)
            return None
        self.say(f"Exported {len(events)} events to {out}")
        return out

    # -- schedules and tools ----------------------------------------------------------------

    def on_new_schedule(self) -> None:
        """Schedules ▸ New schedule."""
        if self.session is not None:
            self.opened.open_form(
                "new_schedule", lambda: ScheduleEditorDialog(self.session)
            )

    def on_edit_schedule(self) -> None:
        """Schedules ▸ Edit selected schedule."""
        view = self.host.schedules
        if self.session is None or view is None:
            return
        row = view.table.currentIndex().row()
        if row < 0 or row >= len(view.model.records):
            self.say("Select a schedule on the Schedules page first (Ctrl+2).")
            return
        record = view.model.records[row]
        editor = self.opened.open_form(
            "edit_schedule", lambda: ScheduleEditorDialog(self.session, record)
        )
        if isinstance(editor, ScheduleEditorDialog) and editor.row != record:
            editor.load(record)  # the open editor, now on the selected schedule

    def on_storage(self) -> None:
        """Tools ▸ Storage."""
        if self.session is None:
            return
        open_view = self.opened.forms.get("storage")
        if open_view is not None and open_view.isVisible():
            self.opened.open_form("storage", lambda: open_view)
            return
        view = StorageView(self.session)
        view.purge_requested.connect(self.on_purge)
        self.opened.open_form("storage", lambda: view)
        self._measure(view)

    @async_slot()
    async def _measure(self, view: StorageView) -> None:
        await view.measure()

    def on_purge(self) -> None:
        """Tools ▸ Purge finished runs."""
        if self.session is not None:
            self.opened.open_form("purge", lambda: PurgeDialog(self.session))

    def on_crash_demo(self) -> None:
        """Tools ▸ Crash-recovery demo: runs in a folder of its own, beside any open file."""
        from harvest_gui.views.crash_demo import CrashDemoView

        base = QStandardPaths.writableLocation(
            QStandardPaths.StandardLocation.AppDataLocation
        )
        view = CrashDemoView(Path(base) / "crash-demo")
        self.opened.show_window(view, child=False)
        view.start()
