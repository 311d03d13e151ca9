"""The inspector window's own actions and menus: File, View and Help.

The Run, Schedules and Tools menus are `operations.py`'s; these are the
actions the window itself answers (open, close, refresh, pages, theme,
About), the recent-files menu, and which of them need an open file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QApplication

from harvest_gui.target import as_target

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMenu

    from harvest_gui.views.window_host import WindowHost


@dataclass(frozen=True)
class WindowActions:
    """The window's own commands, one `QAction` each, kept by the window."""

    open_file: QAction
    open_read_only: QAction
    load_code: QAction
    close_file: QAction
    quit: QAction
    refresh: QAction
    filter_runs: QAction
    runs_page: QAction
    schedules_page: QAction
    queues_page: QAction
    """View ▸ Queues (Ctrl+3): the page had no menu entry nor key (found under Xvfb)."""
    about: QAction
    about_qt: QAction
    theme_group: QActionGroup
    """The theme choices, one checked."""
    themes: dict[str, QAction]
    """View ▸ Theme, by theme key."""

    def set_file_open(self, has_file: bool) -> None:
        """Enable the actions that need an open file only while one is open."""
        for action in (
            self.load_code,
            self.close_file,
            self.refresh,
            self.filter_runs,
            self.runs_page,
            self.schedules_page,
            self.queues_page,
        ):
            action.setEnabled(has_file)


def _action(
    host: WindowHost,
    text: str,
    name: str,
    shortcut: QKeySequence | QKeySequence.StandardKey | str | None = None,
) -> QAction:
    action = QAction(text, host.window())
    action.setObjectName(name)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    host.addAction(action)
    return action


def build_actions(host: WindowHost) -> WindowActions:
    """Create the window's own actions (File, View and Help), connected to `host`."""
    open_file = _action(host, "&Open…", "actionOpen", QKeySequence.StandardKey.Open)
    open_file.setStatusTip("Open a harvest file as its writer")
    open_file.triggered.connect(lambda: host.on_open(read_only=False))
    open_read_only = _action(
        host, "Open &read-only…", "actionOpenReadOnly", "Ctrl+Shift+O"
    )
    open_read_only.setStatusTip("Inspect a file without taking its lock")
    open_read_only.triggered.connect(lambda: host.on_open(read_only=True))
    load_code = _action(host, "Load workflow &code…", "actionLoadCode", "Ctrl+L")
    load_code.setStatusTip(
        "Load a module or .py file's workflows into the open file (remembered for it)"
    )
    load_code.triggered.connect(host.on_load_code)
    close_file = _action(host, "&Close file", "actionCloseFile", "Ctrl+W")
    close_file.triggered.connect(host.on_close_file)
    quit_app = _action(host, "&Quit", "actionQuit")
    # Windows and bare platforms bind no key to StandardKey.Quit; Ctrl+Q is what users try.
    quit_keys = QKeySequence.keyBindings(QKeySequence.StandardKey.Quit)
    quit_app.setShortcuts(quit_keys or [QKeySequence("Ctrl+Q")])
    quit_app.triggered.connect(host.close)
    refresh = _action(
        host, "&Refresh", "actionRefresh", QKeySequence.StandardKey.Refresh
    )
    refresh.setStatusTip("Re-read the file now (it also refreshes by itself)")
    refresh.triggered.connect(host.on_refresh)
    filter_runs = _action(
        host, "&Filter runs", "actionFilter", QKeySequence.StandardKey.Find
    )
    filter_runs.triggered.connect(host.on_filter)
    runs_page = _action(host, "R&uns", "actionRuns", "Ctrl+1")
    runs_page.triggered.connect(lambda: host.show_page(0))
    schedules_page = _action(host, "&Schedules", "actionSchedules", "Ctrl+2")
    schedules_page.triggered.connect(lambda: host.show_page(1))
    queues_page = _action(host, "&Queues", "actionQueues", "Ctrl+3")
    queues_page.triggered.connect(lambda: host.show_page(2))
    about = _action(
        host,
        "&About harvest inspector",
        "actionAbout",
        QKeySequence.StandardKey.HelpContents,
    )
    about.triggered.connect(host.on_about)
    about_qt = _action(host, "About &Qt", "actionAboutQt")
    about_qt.triggered.connect(QApplication.aboutQt)
    theme_group = QActionGroup(host.window())
    themes: dict[str, QAction] = {}
    for key, text in (
        ("system", "&System"),
        ("light", "&Light"),
        ("dark", "&Dark"),
    ):
        action = _action(host, text, f"actionTheme_{key}")
        action.setCheckable(True)
        action.setChecked(host.settings.theme() == key)
        action.triggered.connect(lambda _=False, k=key: host.on_theme(k))
        theme_group.addAction(action)
        themes[key] = action
    actions = WindowActions(
        open_file=open_file,
        open_read_only=open_read_only,
        load_code=load_code,
        close_file=close_file,
        quit=quit_app,
        refresh=refresh,
        filter_runs=filter_runs,
        runs_page=runs_page,
        schedules_page=schedules_page,
        queues_page=queues_page,
        about=about,
        about_qt=about_qt,
        theme_group=theme_group,
        themes=themes,
    )
    actions.set_file_open(host.session is not None)
    return actions


def build_menus(host: WindowHost, actions: WindowActions) -> QMenu:
    """Add the File, View and Help menus of `actions`; returns File ▸ Open recent."""
    bar = host.menuBar()
    file_menu = bar.addMenu("&File")
    file_menu.addAction(actions.open_file)
    file_menu.addAction(actions.open_read_only)
    recent_menu = file_menu.addMenu("Open &recent")
    recent_menu.setObjectName("recentMenu")
    fill_recent_menu(recent_menu, host)
    file_menu.addAction(actions.load_code)
    file_menu.addAction(actions.close_file)
    file_menu.addSeparator()
    file_menu.addAction(actions.quit)
    view_menu = bar.addMenu("&View")
    view_menu.addAction(actions.refresh)
    view_menu.addAction(actions.filter_runs)
    view_menu.addSeparator()
    view_menu.addAction(actions.runs_page)
    view_menu.addAction(actions.schedules_page)
    view_menu.addAction(actions.queues_page)
    theme_menu = view_menu.addMenu("&Theme")
    for action in actions.themes.values():
        theme_menu.addAction(action)
    help_menu = bar.addMenu("&Help")
    help_menu.addAction(actions.about)
    help_menu.addAction(actions.about_qt)
    return recent_menu


def fill_recent_menu(recent_menu: QMenu, host: WindowHost) -> None:
    """Refill File ▸ Open recent from the settings' recent files."""
    recent_menu.clear()
    files = host.settings.recent_files()
    for i, path in enumerate(files):
        action = recent_menu.addAction(f"&{(i + 1) % 10} {path}")
        action.setObjectName(f"recent{i}")
        action.triggered.connect(lambda _=False, p=path: host.open_path(as_target(p)))
    if not files:
        none = recent_menu.addAction("No recent files")
        none.setEnabled(False)
    else:
        recent_menu.addSeparator()
        clear = recent_menu.addAction("Clear recent files")
        clear.triggered.connect(host.on_clear_recent)
