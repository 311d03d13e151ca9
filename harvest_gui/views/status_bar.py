"""The status bar: mode, file, lock holder and the time of the last refresh."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QStatusBar

from harvest_gui.inspect import formatting

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_gui.session import Session


def _label(name: str, accessible: str) -> QLabel:
    label = QLabel()
    label.setObjectName(name)
    label.setAccessibleName(accessible)
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


class InspectorStatusBar(QStatusBar):
    """Permanent fields for the open session; messages go on the left."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("statusBar")
        self.mode = _label("statusMode", "Mode")
        self.file = _label("statusFile", "File")
        self.lock = _label("statusLock", "Lock")
        self.refresh = _label("statusRefresh", "Last refresh")
        for label in (self.mode, self.file, self.lock, self.refresh):
            self.addPermanentWidget(label)
        self.show_session(None)

    def show_session(self, session: Session | None) -> None:
        """Describe `session` (None: no file open)."""
        if session is None:
            self.mode.setText("no file open")
            self.file.setText("")
            self.lock.setText("")
            self.refresh.setText("")
            return
        self.mode.setText(session.mode)
        self.file.setText(f"{session.path} (schema v{session.schema_version})")
        self.lock.setText(session.lock_text)
        self.show_refresh(session.last_refresh)

    def show_refresh(self, at: datetime | None) -> None:
        """The time of the last refresh."""
        self.refresh.setText(
            f"refreshed {formatting.when(at)[11:]}" if at else "refreshed: -"
        )
