"""The page the inspector window shows while no file is open."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

if TYPE_CHECKING:
    from harvest_gui.views.main_window import MainWindow


def welcome_page(window: MainWindow) -> QWidget:
    """The page shown while no file is open; its message label becomes `window.welcome_message`."""
    page = QWidget()
    page.setObjectName("welcomePage")
    layout = QVBoxLayout(page)
    layout.addStretch(1)
    title = QLabel("No harvest file is open.")
    title.setAlignment(Qt.AlignmentFlag.AlignCenter)
    hint = QLabel(
        "Open a database file to inspect its runs (Ctrl+O), or open it read-only to "
        "follow a writer in another process (Ctrl+Shift+O)."
    )
    hint.setWordWrap(True)
    hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
    window.welcome_message = QLabel()
    window.welcome_message.setObjectName("welcomeMessage")
    window.welcome_message.setTextFormat(Qt.TextFormat.PlainText)
    window.welcome_message.setAlignment(Qt.AlignmentFlag.AlignCenter)
    window.welcome_message.setWordWrap(True)
    open_button = QPushButton("Open…")
    open_button.setObjectName("welcomeOpen")
    open_button.clicked.connect(lambda: window.on_open(read_only=False))
    ro_button = QPushButton("Open read-only…")
    ro_button.setObjectName("welcomeOpenReadOnly")
    ro_button.clicked.connect(lambda: window.on_open(read_only=True))
    # Wrapped labels need a width to wrap in: a column holding 60% of the
    # page (centred by stretches) lets each one take the height its text needs.
    column = QVBoxLayout()
    for label in (title, hint, window.welcome_message):
        column.addWidget(label)
    for button in (open_button, ro_button):
        column.addWidget(button, 0, Qt.AlignmentFlag.AlignHCenter)
    row = QHBoxLayout()
    row.addStretch(1)
    row.addLayout(column, 3)
    row.addStretch(1)
    layout.addLayout(row)
    layout.addStretch(2)
    return page
