"""TimeTravelView: a slider over a run's history; summary, pending items and results as of that event."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSlider,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from harvest_gui import formatting
from harvest_gui.forms.error_text import describe_error
from harvest_gui.history_as_of import RunAsOf, state_as_of

if TYPE_CHECKING:
    from harvest_engine import HistoryEvent


def _text(name: str) -> QPlainTextEdit:
    box = QPlainTextEdit()
    box.setObjectName(name)
    box.setReadOnly(True)
    box.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    return box


def _table(name: str, headers: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setObjectName(name)
    table.setHorizontalHeaderLabels(headers)
    table.horizontalHeader().setStretchLastSection(True)
    table.verticalHeader().hide()
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    return table


def _fill(table: QTableWidget, rows: list[tuple[str, ...]]) -> None:
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.setItem(r, c, QTableWidgetItem(value))


class TimeTravelView(QWidget):
    """Drag the slider (or use the arrow keys) to replay the run to any event."""

    def __init__(self, session: Any, exec_id: str) -> None:
        super().__init__()
        self.setObjectName("timeTravelView")
        self.setWindowTitle(f"Time travel — {exec_id}")
        self.session = session
        self.exec_id = exec_id
        self.history: list[HistoryEvent] = []
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setObjectName("timeSlider")
        self.slider.setAccessibleName("Event in the history")
        self.slider.setMinimum(1)
        self.slider.setPageStep(10)
        self.prev_button = QPushButton("◀ &Previous")
        self.prev_button.setObjectName("prevEvent")
        self.next_button = QPushButton("&Next ▶")
        self.next_button.setObjectName("nextEvent")
        self.position = QLabel()
        self.position.setObjectName("timePosition")
        self.position.setTextFormat(Qt.TextFormat.PlainText)
        self.state = QLabel()
        self.state.setObjectName("timeState")
        self.state.setTextFormat(Qt.TextFormat.PlainText)
        self.input = _text("timeInput")
        self.outcome = _text("timeOutcome")
        self.attributes = _text("timeAttributes")
        self.pending = _table("timePending", ["Kind", "Name", "Since event", "Detail"])
        self.results = _table("timeResults", ["Event", "What", "Value"])
        self.pending.setColumnWidth(0, 70)
        self.pending.setColumnWidth(1, 140)
        self.results.setColumnWidth(0, 60)
        self.results.setColumnWidth(1, 220)
        summary = QWidget()
        form = QFormLayout(summary)
        form.addRow("State", self.state)
        form.addRow("Input", self.input)
        form.addRow("Output / error", self.outcome)
        form.addRow("Search attributes", self.attributes)
        right = QSplitter(Qt.Orientation.Vertical)
        pending_box = QWidget()
        pending_layout = QVBoxLayout(pending_box)
        pending_layout.addWidget(QLabel("Pending at this event"))
        pending_layout.addWidget(self.pending)
        results_box = QWidget()
        results_layout = QVBoxLayout(results_box)
        results_layout.addWidget(QLabel("Results and signals so far"))
        results_layout.addWidget(self.results)
        right.addWidget(pending_box)
        right.addWidget(results_box)
        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(summary)
        body.addWidget(right)
        body.setSizes([420, 520])
        nav = QHBoxLayout()
        nav.addWidget(self.prev_button)
        nav.addWidget(self.slider, 1)
        nav.addWidget(self.next_button)
        layout = QVBoxLayout(self)
        layout.addLayout(nav)
        layout.addWidget(self.position)
        layout.addWidget(body, 1)
        self.slider.valueChanged.connect(self.show_seq)
        self.prev_button.clicked.connect(lambda: self.slider.setValue(self.slider.value() - 1))
        self.next_button.clicked.connect(lambda: self.slider.setValue(self.slider.value() + 1))
        self.current: RunAsOf | None = None
        self.resize(1000, 620)
        self.reload()

    def reload(self) -> None:
        """Re-read the history (the slider stays where it was, or goes to the end)."""
        try:
            self.history = self.session.load_history(self.exec_id)
        except Exception as exc:  # a purged run, in words
            self.position.setText(describe_error(exc))
            self.slider.setEnabled(False)
            return
        last = self.history[-1].seq if self.history else 1
        at_end = self.slider.value() >= self.slider.maximum()
        self.slider.setMaximum(last)
        if at_end or self.current is None:
            self.slider.setValue(last)
        self.show_seq(self.slider.value())

    def show_seq(self, seq: int) -> None:
        """Show the run as it stood after event `seq`."""
        s = state_as_of(self.history, seq)
        self.current = s
        self.position.setText(
            f"Event {s.seq} of {s.total_events}: {s.event_type} at {formatting.when_precise(s.at)}"
        )
        self.state.setText(s.state)
        self.input.setPlainText(formatting.json_text(s.input))
        if s.state == "RUNNING":
            self.outcome.setPlainText("(still running at this event)")
        else:
            value = s.output if s.error is None else {"error": s.error}
            self.outcome.setPlainText(formatting.json_text(value))
        self.attributes.setPlainText(formatting.json_text(s.search_attributes))
        _fill(
            self.pending,
            [(p.kind, p.name, str(p.since_seq), p.detail) for p in s.pending],
        )
        rows = [(str(q), what, formatting.json_text(v, None)) for q, what, v in s.results]
        rows += [(str(q), f"signal {n}", formatting.json_text(v, None)) for q, n, v in s.signals]
        _fill(self.results, sorted(rows, key=lambda r: int(r[0])))
        self.prev_button.setEnabled(seq > 1)
        self.next_button.setEnabled(seq < self.slider.maximum())
