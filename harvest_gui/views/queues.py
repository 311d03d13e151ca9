"""The Queues page: each flow-control queue's limits, running and waiting runs, oldest wait, what holds it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from harvest_gui.inspect import formatting
from harvest_gui.inspect.queues import held_by, limits_text, oldest_text
from harvest_gui.models.records import RecordTableModel
from harvest_gui.views.tables import fit_columns_to_titles, record_table

if TYPE_CHECKING:
    from harvest_engine import QueueInfo
    from harvest_gui.session_base import Session


class QueuesView(QWidget):
    """Every queue of the file, re-read at each commit (the oldest wait as of that read)."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.setObjectName("queuesView")
        self.session = session
        self._now = datetime.now(UTC)
        self.model: RecordTableModel[QueueInfo] = RecordTableModel(
            [
                ("Queue", lambda q: q.name),
                ("Limits", limits_text),
                ("Running", lambda q: str(q.running)),
                ("Waiting", lambda q: str(q.waiting)),
                ("Oldest wait", lambda q: oldest_text(q, self._now)),
                ("Held by", held_by),
            ]
        )
        self.table = record_table("queuesTable", "Queues")
        self.table.setModel(self.model)
        fit_columns_to_titles(self.table)
        for col, width in enumerate((220, 280, 80, 80, 110)):
            self.table.setColumnWidth(col, width)
        self.note = QLabel()
        self.note.setObjectName("queuesNote")
        self.note.setTextFormat(Qt.TextFormat.PlainText)
        self.note.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(self.note)
        self.refresh()

    def refresh(self) -> None:
        """Re-read the queues."""
        self._now = datetime.now(UTC)
        rows = self.session.queues()
        self.model.set_records(rows)
        waiting = sum(q.waiting for q in rows)
        self.note.setText(
            f"{formatting.count(len(rows), 'queue')}, "
            f"{formatting.count(waiting, 'run or attempt', 'runs or attempts')} waiting. "
            "A queue named workflow:NAME or activity:NAME holds that workflow's or "
            "activity's own limits."
            if rows
            else "No queues: runs start at once (rt.register_queue and "
            "StartOptions(queue=) or a workflow's concurrency put them in one)."
        )
