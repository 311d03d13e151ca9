"""MainWindow: the inspector window, which shows an open file in its Runs and Schedules pages.

Opening a file (and its workflow code) is `file_opening`'s; the window's own
actions and menus are built in `window_menus` and the acting menus in
`operations`, which see the window as a `WindowHost` (never as this class,
which imports them); the page it shows while no file is open is
`welcome_page`'s.
"""

from __future__ import annotations

import asyncio
import gc
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QApplication,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from harvest_gui import APP_TITLE, theme
from harvest_gui.async_bridge import track
from harvest_gui.session import Session, WriterSession
from harvest_gui.views import window_menus
from harvest_gui.views.demo_banner import DemoBanner
from harvest_gui.views.dialogs import about_text, message_box
from harvest_gui.views.file_opening import FileOpener
from harvest_gui.views.operations import Operations
from harvest_gui.views.queues import QueuesView
from harvest_gui.views.run_detail import RunDetailView
from harvest_gui.views.run_list import RunListView
from harvest_gui.views.schedules import SchedulesView
from harvest_gui.views.screen_fit import fit_on_screen
from harvest_gui.views.status_bar import InspectorStatusBar
from harvest_gui.views.welcome_page import WelcomePage

if TYPE_CHECKING:
    from PySide6.QtGui import QCloseEvent

    from harvest_gui.settings import Settings
    from harvest_gui.target import Target

COUNTS_EVERY_MS = 1000
"""Counts per state are re-read at most this often (a count scans the state index)."""


class MainWindow(QMainWindow):
    """The inspector window.

    Args:
        settings: where geometry, splitters, recent files and the theme live.
        app_module: the `--app` module whose workflows a writer session registers.

    """

    closed = Signal()
    """Emitted once the window has closed and its file is being released."""
    context_changed = Signal()
    """Emitted when the open file or the selected run changes (actions re-enable)."""

    def __init__(self, settings: Settings, app_module: str | None = None) -> None:
        super().__init__()
        self.setObjectName("mainWindow")
        self.settings = settings
        self.app_module = app_module
        self.session: Session | None = None
        self.run_list: RunListView | None = None
        self.detail: RunDetailView | None = None
        self.schedules: SchedulesView | None = None
        self.queues: QueuesView | None = None
        self.last_dialog: QMessageBox | None = None
        self._counts_due = False
        self._counts_timer = QTimer(self)
        self._counts_timer.setSingleShot(True)
        self._counts_timer.timeout.connect(self.on_counts_timer)
        self.opener = FileOpener(self)
        """Opens files into this window and loads workflow code into them."""
        self.status = InspectorStatusBar()
        self.setStatusBar(self.status)
        self.stack = QStackedWidget()
        self.welcome = WelcomePage(self.on_open)
        self.stack.addWidget(self.welcome)
        self.setCentralWidget(self.stack)
        self.own_actions = window_menus.build_actions(self)
        """File, View and Help: the commands the window answers itself."""
        self.recent_menu = window_menus.build_menus(self, self.own_actions)
        self.operations = Operations(self)  # Run, Schedules and Tools (the forms)
        self._update_title()
        self.resize(1280, 800)
        geometry = settings.blob("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        fit_on_screen(self)  # a 1366x768 screen, or a geometry saved on a bigger one
        state = settings.blob("window/state")
        if state is not None:
            self.restoreState(state)

    # -- building ------------------------------------------------------------------------

    def _update_title(self) -> None:
        # The platform appends the application's display name ("… — harvest inspector")
        # to a title that does not end with it: the title names only the file.
        if self.session is None:
            self.setWindowTitle(APP_TITLE)
            return
        suffix = (
            f" ({self.session.mode})"
            if self.session.mode in ("read-only", "client")
            else ""
        )
        self.setWindowTitle(f"{self.session.name}{suffix}")

    # -- opening: FileOpener's, asked through the window (its menus, the welcome page) --

    def on_open(self, read_only: bool) -> None:
        """Ask for a file (non-blocking dialog), then open it."""
        self.opener.on_open(read_only)

    def open_path(
        self, path: Target, read_only: bool = False, client: bool = False
    ) -> bool:
        """Open `path` (see `FileOpener.open_path`); True when it is now open."""
        return self.opener.open_path(path, read_only, client)

    def on_load_code(self) -> None:
        """File ▸ Load workflow code…."""
        self.opener.on_load_code()

    def show_dialog(self, box: QMessageBox) -> None:
        """Open `box` (non-modal) and keep it as the last dialog shown."""
        self.last_dialog = box
        box.open()

    def set_session(self, session: Session) -> None:
        """Show `session`, closing the one shown before.

        The views read the file first: if that fails (a damaged page), the
        error is raised and the file shown before stays open.
        """
        run_list = RunListView(session)
        detail = RunDetailView(session)
        schedules = SchedulesView(session)
        queues = QueuesView(session)
        self.close_session()
        self.session = session
        self.settings.add_recent_file(session.path)
        window_menus.fill_recent_menu(self.recent_menu, self)
        self.run_list, self.detail, self.schedules = run_list, detail, schedules
        self.queues = queues
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("mainSplitter")
        self.splitter.addWidget(self.run_list)
        self.splitter.addWidget(self.detail)
        # The list's share of the width (560 of 1280), on a 1024 px window too.
        width = max(self.width(), 800)
        self.splitter.setSizes([width * 7 // 16, width - width * 7 // 16])
        saved = self.settings.blob("window/splitter")
        if saved is not None:
            self.splitter.restoreState(saved)
        # v3: the Summary column joined the list (a v2 state has one column fewer).
        header = self.settings.blob("runs/header/v3")
        if header is not None:
            self.run_list.table.horizontalHeader().restoreState(header)
        self.demo_banner = DemoBanner(self.settings)
        self.demo_banner.setVisible(DemoBanner.wanted(self.settings, session.path))
        runs_page = QWidget()
        runs_layout = QVBoxLayout(runs_page)
        runs_layout.setContentsMargins(0, 0, 0, 0)
        runs_layout.addWidget(self.demo_banner)
        runs_layout.addWidget(self.splitter, 1)
        self.pages = QTabWidget()
        self.pages.setObjectName("pages")
        self.pages.addTab(runs_page, "Runs")
        self.pages.addTab(self.schedules, "Schedules")
        self.pages.addTab(self.queues, "Queues")
        self.stack.addWidget(self.pages)
        self.stack.setCurrentWidget(self.pages)
        self.detail.listed_damage = self.run_list.model.damaged_of
        self.run_list.run_selected.connect(self.detail.show_run)
        self.run_list.run_selected.connect(lambda _id: self.context_changed.emit())
        self.detail.open_run.connect(self.on_open_run)
        self.schedules.open_run.connect(self.on_schedule_run)
        session.changed.connect(self.on_session_changed)
        session.refreshed.connect(self.status.show_refresh)
        session.drive_error.connect(self.on_drive_error)
        self.status.show_session(session)
        self.own_actions.set_file_open(True)
        self._update_title()
        if isinstance(session, WriterSession) and session.code_module is not None:
            self.opener.start_driving(session)
        self.run_list.table.setFocus()
        if self.run_list.model.rowCount():
            self.run_list.table.selectRow(0)
        self.context_changed.emit()
        # What exists now lives as long as the file is open: keep it out of the
        # collector's full passes, which otherwise stall the UI for 40-70 ms.
        gc.freeze()

    def close_session(self) -> None:
        """Close the open file and go back to the welcome page."""
        session, self.session = self.session, None
        if session is None:
            return
        self._save_views()
        self.opener.close_code_dialog()  # it loads into this file
        if isinstance(session, WriterSession) and session.driving:
            try:
                asyncio.get_running_loop()
                track(asyncio.ensure_future(session.aclose()))
            except RuntimeError:
                session.close()
        else:
            session.close()
        self.stack.setCurrentIndex(0)
        page = self.stack.widget(1)
        if page is not None:
            self.stack.removeWidget(page)
            page.deleteLater()
        self.run_list = self.detail = self.schedules = None
        self.queues = None
        self.status.show_session(None)
        self.own_actions.set_file_open(False)
        self._update_title()
        self.context_changed.emit()

    # -- reacting ----------------------------------------------------------------------------

    def on_session_changed(self) -> None:
        """The file changed: merge it into every view."""
        if self.run_list is None or self.detail is None or self.schedules is None:
            return
        self.run_list.model.refresh()
        if self._counts_timer.isActive():
            self._counts_due = True
        else:
            self.run_list.update_counts()
            self._counts_timer.start(COUNTS_EVERY_MS)
        self.detail.refresh()
        self.schedules.refresh()
        if self.queues is not None:
            self.queues.refresh()

    def on_counts_timer(self) -> None:
        """Catch up on counts skipped while the last count was recent."""
        if self._counts_due and self.run_list is not None:
            self._counts_due = False
            self.run_list.update_counts()

    def on_refresh(self) -> None:
        """F5: re-read everything now."""
        if self.session is not None:
            self.session.refresh()
            if self.run_list is not None:
                self.run_list.show_new_runs()
                self.run_list.update_counts()
            self.status.showMessage("Refreshed", 2000)

    def on_filter(self) -> None:
        """Ctrl+F: go to the run filters."""
        if self.run_list is not None:
            self.pages.setCurrentIndex(0)
            self.run_list.focus_filter()

    def on_open_run(self, exec_id: str) -> None:
        """Follow a link to another run (clearing filters if they hide it)."""
        if self.run_list is None:
            return
        if not self.run_list.select_exec_id(exec_id):
            self.run_list.clear_filters()
            if not self.run_list.select_exec_id(exec_id) and self.detail is not None:
                self.detail.show_run(exec_id)

    def on_schedule_run(self, exec_id: str) -> None:
        """A schedule's run was opened from the Schedules page: show it on the Runs page."""
        self.pages.setCurrentIndex(0)
        self.on_open_run(exec_id)

    def on_drive_error(self, text: str) -> None:
        """A run's drive failed; the others go on. Shown, never raised."""
        self.status.say(f"Drive: {text}", 8000)

    def show_page(self, index: int) -> None:
        """Ctrl+1 / 2 / 3: show page `index` (0: Runs, 1: Schedules, 2: Queues) of the open file."""
        if self.run_list is not None:
            self.pages.setCurrentIndex(index)

    def on_close_file(self) -> None:
        """Ctrl+W."""
        self.close_session()

    def on_clear_recent(self) -> None:
        """Forget recent files."""
        self.settings.clear_recent_files()
        window_menus.fill_recent_menu(self.recent_menu, self)

    def on_theme(self, key: str) -> None:
        """Switch the palette (plots pick it up when next drawn)."""
        self.settings.set_theme(key)
        app = QApplication.instance()
        if isinstance(app, QApplication):
            theme.apply_theme(app, key)
        if self.run_list is not None and self.detail is not None:
            self.run_list.restyle()
            self.detail.timeline.restyle()
            self.detail.summary.restyle()
        self.status.showMessage(f"Theme: {key}", 2000)

    def on_about(self) -> None:
        """Help ▸ About: versions and the open file."""
        box = message_box(
            self,
            QMessageBox.Icon.Information,
            "About harvest inspector",
            "harvest inspector: durable workflows on one SQLite file, seen live.",
            about_text(self.session),
        )
        box.setObjectName("aboutBox")
        self.show_dialog(box)

    # -- closing -------------------------------------------------------------------------------

    def _save_views(self) -> None:
        if self.run_list is not None:
            self.settings.set_blob("window/splitter", self.splitter.saveState())
            self.settings.set_blob(
                "runs/header/v3", self.run_list.table.horizontalHeader().saveState()
            )

    def closeEvent(self, event: QCloseEvent) -> None:
        """Save window state and close the file (letting a drive pass unwind first)."""
        self.settings.set_blob("window/geometry", self.saveGeometry())
        self.settings.set_blob("window/state", self.saveState())
        self.close_session()
        self.settings.sync()
        super().closeEvent(event)
        self.closed.emit()
