"""ElidedLabel: a one-line label that elides to its width and never widens the window."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

from harvest_gui.inspect.formatting import capped, tooltip

if TYPE_CHECKING:
    from PySide6.QtGui import QResizeEvent

MIN_CHARS = 8
"""A label's minimum width, in average characters: the layout may squeeze it this far."""

HINT_CHARS = 80
"""The most width, in average characters, a label asks for when there is room."""


class ElidedLabel(QLabel):
    """Plain text on one line, cut with "…" to the width it gets; the whole text in a tooltip.

    A QLabel asks for the width of its whole text as its minimum, so a long
    workflow id or file path grew the main window past the screen (issue 17).
    This one asks for a few characters at least, shows as much as fits, and
    holds at most `formatting.LABEL_CHARS` characters of a value (a megabyte id
    must not stall painting). `text()` is the whole (capped) text; `shown_text()`
    is what is drawn.
    """

    def __init__(
        self,
        object_name: str = "",
        mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        if object_name:
            self.setObjectName(object_name)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(False)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self._mode = mode
        self._full = ""

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        """Show `text` (capped), elided to the current width."""
        self._full = capped(text or "")
        self._fit()
        self.updateGeometry()

    def text(self) -> str:
        """The whole text (capped), not the elided one."""
        return self._full

    def shown_text(self) -> str:
        """The text as drawn, "…" where it was cut."""
        return QLabel.text(self)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        """A few characters wide: a long text never sets the window's minimum width."""
        width = self.fontMetrics().averageCharWidth() * MIN_CHARS
        return QSize(width, super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        """The whole text's width, up to `HINT_CHARS` characters."""
        metrics = self.fontMetrics()
        margins = self.contentsMargins()
        wanted = (
            metrics.horizontalAdvance(self._full) + margins.left() + margins.right()
        )
        most = metrics.averageCharWidth() * HINT_CHARS
        return QSize(
            max(self.minimumSizeHint().width(), min(wanted + 4, most)),
            super().sizeHint().height(),
        )

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt's name)
        """Elide again for the new width."""
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        width = max(self.contentsRect().width(), 1)
        shown = self.fontMetrics().elidedText(self._full, self._mode, width)
        if shown != QLabel.text(self):
            QLabel.setText(self, shown)
        self.setToolTip(tooltip(self._full) if shown != self._full else "")
