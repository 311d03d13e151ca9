"""WaitingView: the list of what a running run is blocked on, with live timer countdowns."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from harvest_gui.inspect.formatting import fit_line as _fit
from harvest_gui.inspect.waiting import (
    WaitingReport,
    describe,
    summary_line,
    where_text,
)

if TYPE_CHECKING:
    from harvest_engine import RunWait

COUNTDOWN_MS = 1000
"""How often a timer's "in 4m 10s" is redrawn."""


def _label(object_name: str, *, selectable: bool = True) -> QLabel:
    label = QLabel()
    label.setObjectName(object_name)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    if selectable:
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class WaitingView(QWidget):
    """One line per wait (and the user-code line that waits), links to awaited runs.

    Signals:
        open_run(str): the user clicked the link of a child or awaited run.
    """

    open_run = Signal(str)

    def __init__(self, object_name: str) -> None:
        super().__init__()
        self.setObjectName(object_name)
        self.setAccessibleName("What the run is waiting on")
        self.headline = _label(f"{object_name}Headline")
        font = self.headline.font()
        font.setBold(True)
        self.headline.setFont(font)
        self.note = _label(f"{object_name}Note")
        self.panic = QPlainTextEdit()
        self.panic.setObjectName(f"{object_name}Panic")
        self.panic.setAccessibleName("Panic traceback")
        self.panic.setReadOnly(True)
        self.panic.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.panic.setMaximumHeight(self.fontMetrics().height() * 10)
        self.rows = QVBoxLayout()
        self.rows.setContentsMargins(12, 0, 0, 0)
        self.rows.setSpacing(2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.headline)
        layout.addLayout(self.rows)
        layout.addWidget(self.note)
        layout.addWidget(self.panic)
        self.report = WaitingReport(running=False)
        self.wait_labels: list[tuple[RunWait, QLabel]] = []
        self.link_buttons: list[QPushButton] = []
        self._clock = QTimer(self)
        self._clock.setInterval(COUNTDOWN_MS)
        self._clock.timeout.connect(self.on_tick)
        self.show_report(self.report)

    def show_report(self, report: WaitingReport) -> None:
        """Show a new report (an unchanged one is left alone, so the view does not flicker)."""
        if report == self.report and self.wait_labels:
            return
        self.report = report
        self._clear()
        self.headline.setText(_fit(summary_line(report)))
        self.headline.setVisible(report.running or bool(report.panic))
        now = datetime.now(UTC)
        for wait in report.waits:
            self._add_row(wait, now)
        self.note.setText(_fit(report.note))
        self.note.setVisible(bool(report.note))
        self.panic.setPlainText(report.panic)
        self.panic.setVisible(bool(report.panic))
        if any(w.kind == "timer" and w.due_at for w in report.waits):
            self._clock.start()
        else:
            self._clock.stop()

    def lines(self) -> list[str]:
        """The text of each wait's line, as shown (for tests and copying)."""
        return [label.text() for _, label in self.wait_labels]

    def on_tick(self) -> None:
        """Redraw the timers' countdowns."""
        now = datetime.now(UTC)
        for wait, label in self.wait_labels:
            if wait.kind == "timer":
                label.setText(_fit(describe(wait, now)))

    def _add_row(self, wait: RunWait, now: datetime) -> None:
        row = QWidget()
        inner = QVBoxLayout(row)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.setSpacing(0)
        top = QHBoxLayout()
        label = _label("waitLine")
        label.setText(_fit(describe(wait, now)))
        top.addWidget(label, 1)
        if wait.target:
            button = QPushButton("Open run")
            button.setObjectName("waitLink")
            button.setAccessibleName(f"Open run {wait.target}")
            button.setToolTip(f"Select run {wait.target} in the list")
            button.clicked.connect(
                lambda _=False, target=wait.target: self.open_run.emit(target)
            )
            top.addWidget(button)
            self.link_buttons.append(button)
        inner.addLayout(top)
        where = where_text(wait)
        if where:
            place = _label("waitWhere")
            place.setText(_fit(f"    at {where}"))
            place.setToolTip(wait.where.file if wait.where else "")
            place.setStyleSheet("color: palette(placeholder-text);")
            inner.addWidget(place)
        self.rows.addWidget(row)
        self.wait_labels.append((wait, label))

    def _clear(self) -> None:
        self.wait_labels = []
        self.link_buttons = []
        while self.rows.count():
            item = self.rows.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.hide()
                widget.deleteLater()
