"""The Attempts tab: every activity attempt of a run as a table, and the chosen one's error."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from harvest_gui.inspect import formatting
from harvest_gui.models.records import RecordTableModel
from harvest_gui.views.tables import fit_columns_to_titles, record_table

if TYPE_CHECKING:
    from harvest_engine import ActivityAttempt, ErrorInfo


def error_line(error: ErrorInfo | None) -> str:
    """``Type: message`` on one line (table cells), or empty."""
    if error is None:
        return ""
    return formatting.middle(f"{error.type}: {error.message}".replace("\n", " "), 300)


def traceback_of(error: ErrorInfo | None) -> str | None:
    """The attempt's recorded traceback, when the engine stored one."""
    trace = getattr(error, "stack_trace", None)  # ErrorInfo.stack_trace (repair issue)
    return trace if isinstance(trace, str) and trace else None


def _took(a: ActivityAttempt) -> str:
    if a.ended_at is None:
        return ""
    return formatting.duration((a.ended_at - a.started_at).total_seconds())


def _traceback_cell(a: ActivityAttempt) -> str:
    return "yes" if traceback_of(a.error) else ""


class AttemptsView(QWidget):
    """Attempts in the order they started; the selected one's error and traceback below."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("attemptsView")
        self.model: RecordTableModel[ActivityAttempt] = RecordTableModel(
            [
                ("Activity", lambda a: a.name),
                ("#", lambda a: str(a.attempt)),
                ("Started", lambda a: formatting.when_precise(a.started_at)),
                ("Ended", lambda a: formatting.when_precise(a.ended_at)),
                ("Took", _took),
                ("Outcome", lambda a: a.outcome or "RUNNING"),
                ("Error", lambda a: error_line(a.error)),
                ("Traceback", _traceback_cell),
            ]
        )
        self.table = record_table("attemptsTable", "Activity attempts")
        self.table.setModel(self.model)
        header = self.table.horizontalHeader()
        header.setStretchLastSection(False)
        metrics = self.table.fontMetrics()
        for col, sample in enumerate(
            ("reserve_inventory", "9", "00:00:00.000", "00:00:00.000", "4 m 05 s",
             "TIMED_OUT", "", "yes")
        ):  # fmt: skip
            self.table.setColumnWidth(col, metrics.horizontalAdvance(sample) + 16)
        fit_columns_to_titles(self.table)
        # The error takes the room left, so the outcome and error are in view.
        header.setSectionResizeMode(6, QHeaderView.ResizeMode.Stretch)
        self.table.selectionModel().currentRowChanged.connect(self.on_current_changed)
        self.note = QLabel()
        self.note.setObjectName("attemptsNote")
        self.note.setTextFormat(Qt.TextFormat.PlainText)
        self.detail = QPlainTextEdit()
        self.detail.setObjectName("attemptError")
        self.detail.setAccessibleName("The selected attempt's error and traceback")
        self.detail.setReadOnly(True)
        self.detail.setFont(
            QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        )
        self.detail.setPlaceholderText("Select an attempt to see its error.")
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(self.detail)
        split.setSizes([300, 150])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.note)
        layout.addWidget(split, 1)

    def show_attempts(self, attempts: list[ActivityAttempt]) -> None:
        """Show the attempts, oldest first; say how many failed."""
        ordered = sorted(
            attempts, key=lambda a: (a.started_at, a.activity_id, a.attempt)
        )
        if ordered == self.model.records:
            return
        self.model.set_records(ordered)
        failed = sum(1 for a in ordered if a.error is not None)
        if not ordered:
            self.note.setText("No activity has been attempted in this run.")
        else:
            self.note.setText(
                f"{formatting.count(len(ordered), 'attempt')}, {failed:,} with an error"
            )
        self.detail.clear()

    def on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        """Show the chosen attempt's error in full, with its traceback when recorded."""
        if not current.isValid() or current.row() >= len(self.model.records):
            self.detail.clear()
            return
        a = self.model.records[current.row()]
        if a.error is None:
            self.detail.setPlainText(
                f"Attempt {a.attempt} of {a.name}: {a.outcome}, no error."
            )
            return
        parts = [f"{a.error.type}: {a.error.message}"]
        trace = traceback_of(a.error)
        parts.append(trace if trace else "(no traceback recorded for this attempt)")
        self.detail.setPlainText("\n\n".join(parts))
