"""The page the inspector window shows while no file is open."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

if TYPE_CHECKING:
    from collections.abc import Callable


class WelcomePage(QWidget):
    """The page shown while no file is open, with Open buttons and the last open error.

    Args:
        on_open: asks for a file and opens it; called with `read_only`.

    """

    def __init__(self, on_open: Callable[[bool], None]) -> None:
        super().__init__()
        self.setObjectName("welcomePage")
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        title = QLabel("No harvest file is open.")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        hint = QLabel(
            "Open a database file to inspect its runs (Ctrl+O), or open it read-only to "
            "follow a writer in another process (Ctrl+Shift+O)."
        )
        hint.setWordWrap(True)
        hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message = QLabel()
        """Why the last file could not be opened (empty until one could not)."""
        self.message.setObjectName("welcomeMessage")
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setWordWrap(True)
        open_button = QPushButton("Open…")
        open_button.setObjectName("welcomeOpen")
        open_button.clicked.connect(lambda: on_open(False))
        ro_button = QPushButton("Open read-only…")
        ro_button.setObjectName("welcomeOpenReadOnly")
        ro_button.clicked.connect(lambda: on_open(True))
        # Wrapped labels need a width to wrap in: a column holding 60% of the
        # page (centred by stretches) lets each one take the height its text needs.
        column = QVBoxLayout()
        for label in (title, hint, self.message):
            column.addWidget(label)
        for button in (open_button, ro_button):
            column.addWidget(button, 0, Qt.AlignmentFlag.AlignHCenter)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addLayout(column, 3)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addStretch(2)
