"""The status bar: mode, file, lock holder and the time of the last refresh."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QLabel, QStatusBar

from harvest_gui.inspect import formatting
from harvest_gui.views.elided import ElidedLabel

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from harvest_gui.session import Session


SPACING = 12
"""Pixels between status bar fields (the layout's spacing and the fields' margins)."""

QWIDGETSIZE_MAX = (1 << 24) - 1
"""Qt's "no maximum" width."""


def _label(name: str, accessible: str) -> QLabel:
    label = ElidedLabel(name, Qt.TextElideMode.ElideMiddle)
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
        self.serving = _label("statusServing", "Serving heartbeat")
        for label in (self.mode, self.file, self.lock, self.serving, self.refresh):
            self.addPermanentWidget(label)
        # In client mode the serving process's heartbeat age, read each second.
        self._session: Session | None = None
        self._beat = QTimer(self)
        self._beat.setInterval(1000)
        self._beat.timeout.connect(self.show_serving)
        self.show_session(None)
        self.messageChanged.connect(self._on_message_changed)

    def say(self, text: str, ms: int = 6000) -> None:
        """A message on the left; the file and lock fields yield room to it meanwhile.

        QStatusBar clipped a long message mid-word behind the permanent fields.
        While a message shows, the (elided) file and lock fields shrink as far as
        the message needs; what still does not fit ends at a word with "…", and
        the whole message is the status bar's tooltip.
        """
        metrics = self.fontMetrics()
        fixed = sum(
            label.sizeHint().width() + SPACING
            for label in (self.mode, self.serving, self.refresh)
            if not label.isHidden()
        )
        squeezable = (self.file, self.lock)
        # What the two fields may take so that the whole message fits beside them.
        spare = (
            self.width()
            - fixed
            - metrics.horizontalAdvance(text)
            - 2 * SPACING
            - len(squeezable) * SPACING
        )
        each = spare // len(squeezable)
        for label in squeezable:
            if each < label.minimumSizeHint().width():  # too little: they step aside
                label.setMaximumWidth(0)
            else:
                label.setMaximumWidth(min(label.sizeHint().width(), each))
        room = self.width() - fixed - 2 * SPACING
        room -= sum(lb.maximumWidth() + SPACING for lb in squeezable)
        shown = fit_words(text, metrics.horizontalAdvance, room)
        self.setToolTip(formatting.tooltip(text) if shown != text else "")
        self.showMessage(shown, ms)

    def _on_message_changed(self, message: str) -> None:
        if not message:  # the message went: the fields take their room back
            for label in (self.file, self.lock):
                label.setMaximumWidth(QWIDGETSIZE_MAX)
            self.setToolTip("")

    def show_session(self, session: Session | None) -> None:
        """Describe `session` (None: no file open)."""
        self._session = session
        self.show_serving()
        if session is None:
            self.mode.setText("no file open")
            self.file.setText("")
            self.lock.setText("")
            self.refresh.setText("")
            return
        self.mode.setText(session.mode)
        self.file.setText(f"{session.name} (schema v{session.schema_version})")
        self.lock.setText(session.lock_text)
        self.show_refresh(session.last_refresh)

    def show_serving(self) -> None:
        """The serving heartbeat's age (client mode); the field hides in the other modes."""
        session = self._session
        text = session.serving_text() if session is not None else None
        self.serving.setText(text or "")
        self.serving.setVisible(text is not None)
        if text is None:
            self._beat.stop()
        elif not self._beat.isActive():
            self._beat.start()

    def show_refresh(self, at: datetime | None) -> None:
        """The time of the last refresh."""
        self.refresh.setText(
            f"refreshed {formatting.when(at)[11:]}" if at else "refreshed: -"
        )


def fit_words(text: str, width_of: Callable[[str], int], room: int) -> str:
    """`text`, or its longest run of whole words plus "…" that is `room` wide at most."""
    text = formatting.capped(" ".join(text.split()))
    if width_of(text) <= room:
        return text
    words = text.split(" ")
    shown = ""
    for word in words:
        candidate = f"{shown} {word}".strip()
        if width_of(candidate + " …") > room:
            break
        shown = candidate
    return (shown or words[0][: max(room // 10, 1)]) + " …"
