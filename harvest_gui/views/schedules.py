"""The Schedules page: every stored schedule, its spec, next fire time and state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from harvest_gui.inspect import formatting
from harvest_gui.models.records import RecordTableModel
from harvest_gui.views.tables import fit_columns_to_titles, record_table

if TYPE_CHECKING:
    from harvest_engine import ScheduleRow
    from harvest_gui.session import Session


def _spec(row: ScheduleRow) -> str:
    return row.schedule.describe() if row.schedule is not None else "(damaged spec)"


class SchedulesView(QWidget):
    """A read-only list of schedules (the editor is issue 6 part 2)."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.setObjectName("schedulesView")
        self.session = session
        self.model: RecordTableModel[ScheduleRow] = RecordTableModel(
            [
                ("Workflow", lambda r: r.workflow_name),
                ("Spec", _spec),
                (
                    "Next fire",
                    lambda r: formatting.when(r.next_fire_at) if not r.paused else "",
                ),
                ("State", lambda r: "paused" if r.paused else "active"),
                ("Overlap", lambda r: str(r.overlap)),
                ("Max active runs", lambda r: str(r.max_active_runs)),
                ("Last fired", lambda r: formatting.when(r.last_fired_at) or "never"),
                ("Input", lambda r: formatting.one_line(r.input)),
                ("Problem", lambda r: r.problem or ""),
            ]
        )
        self.table = record_table("schedulesTable", "Schedules")
        self.table.setModel(self.model)
        fit_columns_to_titles(self.table)
        for col, width in enumerate((160, 200, 150, 70, 80, 110, 150)):
            self.table.setColumnWidth(col, width)
        self.note = QLabel()
        self.note.setObjectName("schedulesNote")
        self.note.setTextFormat(Qt.TextFormat.PlainText)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(self.note)
        self.refresh()

    def refresh(self) -> None:
        """Re-read the schedules."""
        rows = self.session.list_schedules()
        self.model.set_records(rows)
        self.note.setText(
            f"{formatting.count(len(rows), 'schedule')}."
            if rows
            else "No schedules are stored in this file."
        )
