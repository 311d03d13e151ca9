"""StorageView: file and WAL size, runs and events per state, the oldest finished run, a purge hint."""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from harvest_engine import SqliteReader
from harvest_gui.async_bridge import async_slot
from harvest_gui.forms.error_text import describe_error
from harvest_gui.inspect import formatting
from harvest_gui.inspect.storage_report import StorageReport, storage_report
from harvest_gui.target import codec


def measure(path: Any) -> StorageReport:
    """Measure `path` on a reader of this thread's own (sqlite connections are thread-bound)."""
    with SqliteReader.open(path, codec=codec()) as reader:
        return storage_report(path, reader)


def _bytes(n: int) -> str:
    return formatting.size_text(n)


class StorageView(QWidget):
    """The numbers are measured off the UI thread; "Purge…" opens the purge form.

    Signals:
        purge_requested(): the user asked for the purge form.
        measured(object): a new `StorageReport` is shown.
    """

    purge_requested = Signal()
    measured = Signal(object)

    def __init__(self, session: Any) -> None:
        super().__init__()
        self.setObjectName("storageView")
        self.setWindowTitle(f"Storage — {session.name}")
        self.session = session
        self.report: StorageReport | None = None
        self.file_size = QLabel()
        self.file_size.setObjectName("fileSize")
        self.wal_size = QLabel()
        self.wal_size.setObjectName("walSize")
        self.oldest = QLabel()
        self.oldest.setObjectName("oldestTerminal")
        self.suggestion = QLabel()
        self.suggestion.setObjectName("purgeSuggestion")
        self.suggestion.setWordWrap(True)
        self.note = QLabel()
        self.note.setObjectName("storageNote")
        self.note.setWordWrap(True)
        for label in (
            self.file_size,
            self.wal_size,
            self.oldest,
            self.suggestion,
            self.note,
        ):
            label.setTextFormat(Qt.TextFormat.PlainText)
        self.table = QTableWidget(0, 3)
        self.table.setObjectName("stateTable")
        self.table.setAccessibleName("Runs and events per state")
        self.table.setHorizontalHeaderLabels(["State", "Runs", "Events"])
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.refresh_button = QPushButton("&Measure again")
        self.refresh_button.setObjectName("storageRefresh")
        self.purge_button = QPushButton("&Purge…")
        self.purge_button.setObjectName("storagePurge")
        self.purge_button.setEnabled(bool(getattr(session, "can_write", False)))
        if not self.purge_button.isEnabled():
            self.purge_button.setToolTip("Read-only: purging needs the writer lock")
        form = QFormLayout()
        form.addRow("Database file", self.file_size)
        form.addRow("Write-ahead log", self.wal_size)
        form.addRow("Oldest finished run", self.oldest)
        form.addRow("Suggestion", self.suggestion)
        buttons = QHBoxLayout()
        buttons.addWidget(self.refresh_button)
        buttons.addStretch(1)
        buttons.addWidget(self.purge_button)
        self.close_button = QPushButton("&Close")
        self.close_button.setObjectName("storageClose")
        self.close_button.clicked.connect(self.close)
        buttons.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.table)
        layout.addWidget(self.note)
        layout.addLayout(buttons)
        self.refresh_button.clicked.connect(self.on_refresh_clicked)
        self.purge_button.clicked.connect(self.purge_requested)
        self.resize(560, 460)
        self.note.setText("Measuring…")

    @async_slot()
    async def on_refresh_clicked(self) -> None:
        """Measure again, off the UI thread."""
        await self.measure()

    async def measure(self) -> StorageReport | None:
        """Measure the file in a worker thread and show the numbers."""
        if isinstance(self.session.path, str):
            self.note.setText(
                "Sizes are measured on a SQLite file; a Postgres server reports its own."
            )
            return None
        self.refresh_button.setEnabled(False)
        self.note.setText("Measuring…")
        try:
            report = await asyncio.get_running_loop().run_in_executor(
                None, measure, self.session.path
            )
        except Exception as exc:  # a vanished or damaged file, in words
            self.note.setText(describe_error(exc))
            return None
        finally:
            self.refresh_button.setEnabled(True)
        self.show_report(report)
        return report

    def show_report(self, report: StorageReport) -> None:
        """Fill the labels and the table."""
        self.report = report
        self.file_size.setText(_bytes(report.file_bytes))
        self.wal_size.setText(_bytes(report.wal_bytes) if report.wal_bytes else "none")
        self.oldest.setText(
            formatting.when(report.oldest_terminal) or "no finished runs"
        )
        self.suggestion.setText(report.suggestion)
        states = [s for s, n in report.runs_by_state.items() if n] or list(
            report.runs_by_state
        )
        self.table.setRowCount(len(states) + 1)
        for r, state in enumerate([*states, "total"]):
            runs = (
                report.total_runs
                if state == "total"
                else report.runs_by_state.get(state, 0)
            )
            events = (
                sum(report.events_by_state.values())
                if state == "total"
                else report.events_by_state.get(state, 0)
            )
            for c, text in enumerate((state, f"{runs:,}", f"{events:,}")):
                self.table.setItem(r, c, QTableWidgetItem(text))
        self.note.setText(
            f"Events counted for the newest {report.scanned_runs:,} of {report.total_runs:,} runs."
            if report.partial
            else f"Counted every run's events ({report.scanned_runs:,} runs)."
        )
        self.measured.emit(report)
