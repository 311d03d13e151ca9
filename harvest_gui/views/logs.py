"""The Logs tab: a run's `ctx.log` lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from harvest_gui.inspect import formatting
from harvest_gui.models.records import RecordTableModel
from harvest_gui.views.tables import fit_columns_to_titles, record_table

if TYPE_CHECKING:
    from harvest_engine import LogLine


class LogsView(QWidget):
    """Log lines in order; a note when the run's log dropped lines."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("logsView")
        self.model: RecordTableModel[LogLine] = RecordTableModel(
            [
                ("Seq", lambda line: str(line.seq)),
                ("Time", lambda line: formatting.when_precise(line.at)),
                ("Message", lambda line: line.message),
            ]
        )
        self.table = record_table("logsTable", "Workflow log")
        self.table.setModel(self.model)
        fit_columns_to_titles(self.table)
        self.note = QLabel()
        self.note.setObjectName("logsNote")
        self.note.setTextFormat(Qt.TextFormat.PlainText)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table)
        layout.addWidget(self.note)

    def show_logs(self, lines: list[LogLine]) -> None:
        """Show the lines; a truncation marker is reported below the table."""
        kept = [line for line in lines if not line.marker]
        shown = self.model.records
        if shown and len(kept) >= len(shown) and kept[len(shown) - 1] == shown[-1]:
            self.model.append_records(kept[len(shown) :])
        else:
            self.model.set_records(kept)
        markers = [line for line in lines if line.marker]
        if markers:
            self.note.setText(f"{len(kept)} lines kept; {markers[-1].message}")
        else:
            self.note.setText(
                f"{len(kept)} lines" if kept else "This run has logged nothing."
            )
