"""FormWindows: keeps the one open form or view of each kind in step with the selected run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import QDialog, QWidget

from harvest_gui.views.screen_fit import fit_on_screen

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_gui.views.window_host import WindowHost


class FormWindows:
    """The non-modal windows opened from the acting menus, at most one form per kind.

    Reopening a kind raises the open one (issue 31); an open run form follows
    the selected run, and one of a file that closed is closed with it.

    Args:
        host: the inspector window (parent of the windows, source of the selection).

    """

    def __init__(self, host: WindowHost) -> None:
        self.host = host
        self.window = host.window()
        """The window as a widget: parent of the forms and views opened from here."""
        self.windows: list[QWidget] = []
        self.forms: dict[str, QWidget] = {}
        """The open form or view of each kind: reopening raises it (issue 31)."""

    def show_window(self, widget: QWidget, *, child: bool = True) -> QWidget:
        """Show a non-modal window (never exec(): a nested event loop under qasync) and keep it."""
        if child:
            # Parented: on top of the main window (transient for it), never lost behind.
            kind = (
                Qt.WindowType.Dialog
                if isinstance(widget, QDialog)
                else Qt.WindowType.Window
            )
            widget.setParent(self.window, kind)
        self.windows = [w for w in self.windows if w.isVisible()]
        self.windows.append(widget)
        succeeded = getattr(widget, "succeeded", None)
        if succeeded is not None:
            succeeded.connect(self.on_changed)
        if not isinstance(widget, QDialog):  # a dialog closes on Escape by itself
            escape = QShortcut(QKeySequence(Qt.Key.Key_Escape), widget)
            escape.activated.connect(widget.close)
        if not widget.testAttribute(Qt.WidgetAttribute.WA_Resized):
            widget.adjustSize()  # the size show() would give it, so fitting sees it
        fit_on_screen(widget, over=self.window)
        widget.show()
        if QGuiApplication.platformName() != "offscreen":  # it warns it cannot raise()
            widget.raise_()
        return widget

    def open_form(
        self,
        kind: str,
        make: Callable[[], QWidget],
        target: str | None = None,
        *,
        child: bool = True,
    ) -> QWidget:
        """Show the one window of `kind`: raise the open one, else make one.

        An open run form follows the selection (`retarget`); an open window that
        cannot (a view pinned to its run) is replaced when asked for another.
        """
        existing = self.forms.get(kind)
        if existing is not None and existing.isVisible():
            current = getattr(existing, "exec_id", target)
            retarget = getattr(existing, "retarget", None)
            if target is not None and current != target and retarget is not None:
                retarget(target)
            if target is None or getattr(existing, "exec_id", target) == target:
                existing.raise_()
                existing.activateWindow()
                return existing
            existing.close()
        widget = self.show_window(make(), child=child)
        self.forms[kind] = widget
        return widget

    def follow_selection(self) -> None:
        """Retarget the open run forms to the selected run; close those of a closed file."""
        session = self.host.session
        detail = self.host.detail
        exec_id = None if detail is None else detail.exec_id
        for kind, widget in list(self.forms.items()):
            if not widget.isVisible():
                del self.forms[kind]
                continue
            if getattr(widget, "session", session) is not session:
                widget.close()
                del self.forms[kind]
                continue
            retarget = getattr(widget, "retarget", None)
            if retarget is not None and exec_id is not None:
                retarget(exec_id)

    def on_changed(self, _result: Any = None) -> None:
        """A form changed the file: refresh the views now."""
        session = self.host.session
        if session is not None and not session.closed:
            session.refresh()

    def close_windows(self) -> None:
        """The main window closed: close everything opened from here."""
        for widget in self.windows:
            widget.close()
        self.windows = []
