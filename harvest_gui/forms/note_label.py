"""NoteLabel: a wrapped line of help under a form field, as tall as its text at its width.

A word-wrapped QLabel in a form is given the height its text needs at its
size hint's width (about 220 px); laid out wider, it kept that height and
left a blank line under the note (found under Xvfb in the run forms).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy


class NoteLabel(QLabel):
    """Plain text, word-wrapped, its height set from its width at every resize."""

    def __init__(self, text: str = "") -> None:
        super().__init__(text)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(True)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def resizeEvent(self, event: Any) -> None:
        """Fit the height to the text at the new width."""
        super().resizeEvent(event)
        self._fit()

    def setText(self, text: str) -> None:
        """Set the text and fit the height to it."""
        super().setText(text)
        self._fit()

    def _fit(self) -> None:
        height = self.heightForWidth(self.width())
        if height > 0 and height != self.height():
            self.setFixedHeight(height)
