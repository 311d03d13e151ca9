"""WindowHost: what the inspector window's menus and operations use of the window.

`MainWindow` imports the modules that build its menus; they take a
`WindowHost` instead of importing `MainWindow` back, so the import graph has
no circle and each of them says exactly what it needs of the window.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QMenuBar, QWidget

    from harvest_gui.session import Session
    from harvest_gui.settings import Settings
    from harvest_gui.target import Target
    from harvest_gui.views.run_detail import RunDetailView
    from harvest_gui.views.run_list import RunListView
    from harvest_gui.views.schedules import SchedulesView
    from harvest_gui.views.status_bar import InspectorStatusBar


class WindowHost(Protocol):
    """The inspector window as its menus and operations see it."""

    # -- what it shows -----------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        """Where recent files, the theme and the drive interval live."""

    @property
    def session(self) -> Session | None:
        """The open file, or None."""

    @property
    def detail(self) -> RunDetailView | None:
        """The selected run's detail (None while no file is open)."""

    @property
    def run_list(self) -> RunListView | None:
        """The run list, whose filter the bulk actions act on (None while no file is open)."""

    @property
    def schedules(self) -> SchedulesView | None:
        """The Schedules page (None while no file is open)."""

    @property
    def status(self) -> InspectorStatusBar:
        """The status bar, where commands say why they do not apply."""

    @property
    def closed(self) -> SignalInstance:
        """Emitted once the window has closed."""

    @property
    def context_changed(self) -> SignalInstance:
        """Emitted when the open file or the selected run changes."""

    # -- what its own menus ask of it --------------------------------------------------

    def on_open(self, read_only: bool) -> None:
        """Ask for a file, then open it."""

    def open_path(
        self, path: Target, read_only: bool = False, client: bool = False
    ) -> bool:
        """Open `path`; True when it is now open."""

    def on_open_run(self, exec_id: str) -> None:
        """Select run `exec_id` in the list (clearing filters that hide it)."""

    def on_load_code(self) -> None:
        """Ask for workflow code to load into the open file."""

    def on_close_file(self) -> None:
        """Close the open file."""

    def on_refresh(self) -> None:
        """Re-read everything now."""

    def on_filter(self) -> None:
        """Go to the run filters."""

    def show_page(self, index: int) -> None:
        """Show page `index` (0: Runs, 1: Schedules, 2: Queues) of the open file."""

    def on_theme(self, key: str) -> None:
        """Switch the palette."""

    def on_about(self) -> None:
        """Show the About box."""

    def on_clear_recent(self) -> None:
        """Forget the recent files."""

    # -- the Qt parts they build on ----------------------------------------------------

    def window(self) -> QWidget:
        """The window as a widget (QWidget.window()): parent of actions and dialogs."""

    def menuBar(self) -> QMenuBar:  # noqa: N802 (Qt's name)
        """The window's menu bar."""

    def addAction(self, action: QAction) -> None:  # noqa: N802 (Qt's name)
        """Make `action`'s shortcut work anywhere in the window."""

    def close(self) -> bool:
        """Close the window."""
