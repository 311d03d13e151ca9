"""The inspector window's own actions and menus: File, View and Help.

The Run, Schedules and Tools menus are `operations.py`'s; these are the
actions the window itself answers (open, close, refresh, pages, theme,
About), the recent-files menu, and which of them need an open file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QApplication

from harvest_gui.target import as_target

if TYPE_CHECKING:
    from harvest_gui.views.main_window import MainWindow


def _action(
    window: MainWindow,
    text: str,
    name: str,
    shortcut: QKeySequence | QKeySequence.StandardKey | str | None = None,
) -> QAction:
    action = QAction(text, window)
    action.setObjectName(name)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    window.addAction(action)
    return action


def build_actions(window: MainWindow) -> None:
    """Create the window's own actions (File, View and Help) and connect them."""
    window.open_action = _action(
        window, "&Open…", "actionOpen", QKeySequence.StandardKey.Open
    )
    window.open_action.setStatusTip("Open a harvest file as its writer")
    window.open_action.triggered.connect(lambda: window.on_open(read_only=False))
    window.open_ro_action = _action(
        window, "Open &read-only…", "actionOpenReadOnly", "Ctrl+Shift+O"
    )
    window.open_ro_action.setStatusTip("Inspect a file without taking its lock")
    window.open_ro_action.triggered.connect(lambda: window.on_open(read_only=True))
    window.close_action = _action(window, "&Close file", "actionCloseFile", "Ctrl+W")
    window.close_action.triggered.connect(window.on_close_file)
    window.quit_action = _action(window, "&Quit", "actionQuit")
    # Windows and bare platforms bind no key to StandardKey.Quit; Ctrl+Q is what users try.
    quit_keys = QKeySequence.keyBindings(QKeySequence.StandardKey.Quit)
    window.quit_action.setShortcuts(quit_keys or [QKeySequence("Ctrl+Q")])
    window.quit_action.triggered.connect(window.close)
    window.refresh_action = _action(
        window, "&Refresh", "actionRefresh", QKeySequence.StandardKey.Refresh
    )
    window.refresh_action.setStatusTip(
        "Re-read the file now (it also refreshes by itself)"
    )
    window.refresh_action.triggered.connect(window.on_refresh)
    window.filter_action = _action(
        window, "&Filter runs", "actionFilter", QKeySequence.StandardKey.Find
    )
    window.filter_action.triggered.connect(window.on_filter)
    window.runs_action = _action(window, "R&uns", "actionRuns", "Ctrl+1")
    window.runs_action.triggered.connect(lambda: window.pages.setCurrentIndex(0))
    window.schedules_action = _action(window, "&Schedules", "actionSchedules", "Ctrl+2")
    window.schedules_action.triggered.connect(lambda: window.pages.setCurrentIndex(1))
    window.about_action = _action(
        window,
        "&About harvest inspector",
        "actionAbout",
        QKeySequence.StandardKey.HelpContents,
    )
    window.about_action.triggered.connect(window.on_about)
    window.about_qt_action = _action(window, "About &Qt", "actionAboutQt")
    window.about_qt_action.triggered.connect(QApplication.aboutQt)
    window.theme_group = QActionGroup(window)
    window.theme_actions = {}
    for key, text in (
        ("system", "&System"),
        ("light", "&Light"),
        ("dark", "&Dark"),
    ):
        action = _action(window, text, f"actionTheme_{key}")
        action.setCheckable(True)
        action.setChecked(window.settings.theme() == key)
        action.triggered.connect(lambda _=False, k=key: window.on_theme(k))
        window.theme_group.addAction(action)
        window.theme_actions[key] = action
    set_session_actions(window)


def build_menus(window: MainWindow) -> None:
    """Add the File, View and Help menus of the window's own actions."""
    bar = window.menuBar()
    file_menu = bar.addMenu("&File")
    file_menu.addAction(window.open_action)
    file_menu.addAction(window.open_ro_action)
    window.recent_menu = file_menu.addMenu("Open &recent")
    window.recent_menu.setObjectName("recentMenu")
    fill_recent_menu(window)
    file_menu.addAction(window.close_action)
    file_menu.addSeparator()
    file_menu.addAction(window.quit_action)
    view_menu = bar.addMenu("&View")
    view_menu.addAction(window.refresh_action)
    view_menu.addAction(window.filter_action)
    view_menu.addSeparator()
    view_menu.addAction(window.runs_action)
    view_menu.addAction(window.schedules_action)
    theme_menu = view_menu.addMenu("&Theme")
    for action in window.theme_actions.values():
        theme_menu.addAction(action)
    help_menu = bar.addMenu("&Help")
    help_menu.addAction(window.about_action)
    help_menu.addAction(window.about_qt_action)


def fill_recent_menu(window: MainWindow) -> None:
    """Refill File ▸ Open recent from the settings' recent files."""
    window.recent_menu.clear()
    files = window.settings.recent_files()
    for i, path in enumerate(files):
        action = window.recent_menu.addAction(f"&{(i + 1) % 10} {path}")
        action.setObjectName(f"recent{i}")
        action.triggered.connect(lambda _=False, p=path: window.open_path(as_target(p)))
    if not files:
        none = window.recent_menu.addAction("No recent files")
        none.setEnabled(False)
    else:
        window.recent_menu.addSeparator()
        clear = window.recent_menu.addAction("Clear recent files")
        clear.triggered.connect(window.on_clear_recent)


def set_session_actions(window: MainWindow) -> None:
    """Enable the actions that need an open file only while one is open."""
    has = window.session is not None
    for action in (
        window.close_action,
        window.refresh_action,
        window.filter_action,
        window.runs_action,
        window.schedules_action,
    ):
        action.setEnabled(has)
