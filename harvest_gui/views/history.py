"""The History tab: the event table, a type and text filter, and the selected event's JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from harvest_gui import formatting
from harvest_gui.models.history import HistoryFilter, HistoryModel
from harvest_gui.views.payload import PayloadView

if TYPE_CHECKING:
    from harvest_engine import HistoryEvent

ALL_TYPES = "All event types"


class HistoryView(QWidget):
    """A run's events with filters; selecting one shows its full JSON."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("historyView")
        self.model = HistoryModel()
        self.proxy = HistoryFilter()
        self.proxy.setSourceModel(self.model)
        self.type_filter = QComboBox()
        self.type_filter.setObjectName("historyTypeFilter")
        self.type_filter.setAccessibleName("Event type filter")
        self.type_filter.addItem(ALL_TYPES)
        self.type_filter.currentTextChanged.connect(self.on_type_changed)
        self.text_filter = QLineEdit()
        self.text_filter.setObjectName("historyTextFilter")
        self.text_filter.setAccessibleName("Event text filter")
        self.text_filter.setPlaceholderText("Filter events by type or name…")
        self.text_filter.setClearButtonEnabled(True)
        self.text_filter.textChanged.connect(self.proxy.set_text)
        self.count = QLabel()
        self.count.setTextFormat(Qt.TextFormat.PlainText)
        self.table = QTableView()
        self.table.setObjectName("historyTable")
        self.table.setAccessibleName("Event history")
        self.table.setModel(self.proxy)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setColumnWidth(0, 60)
        self.table.setColumnWidth(1, 110)
        self.table.setColumnWidth(2, 210)
        self.table.selectionModel().currentRowChanged.connect(self.on_current_changed)
        self.event_json = PayloadView("Selected event", "eventJson")
        bar = QHBoxLayout()
        bar.addWidget(self.type_filter)
        bar.addWidget(self.text_filter, 1)
        bar.addWidget(self.count)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addLayout(bar)
        top_layout.addWidget(self.table)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("historySplitter")
        self.splitter.addWidget(top)
        self.splitter.addWidget(self.event_json)
        self.splitter.setSizes([400, 200])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter)

    def show_events(self, events: list[HistoryEvent]) -> None:
        """Show a run's events (new ones are appended, keeping the selection)."""
        self.model.show(events)
        types = sorted({e.type for e in events})
        known = [self.type_filter.itemText(i) for i in range(1, self.type_filter.count())]
        if types != known:
            current = self.type_filter.currentText()
            self.type_filter.blockSignals(True)
            self.type_filter.clear()
            self.type_filter.addItem(ALL_TYPES)
            self.type_filter.addItems(types)
            index = self.type_filter.findText(current)
            self.type_filter.setCurrentIndex(max(index, 0))
            self.type_filter.blockSignals(False)
            self.on_type_changed(self.type_filter.currentText())
        self.count.setText(f"{len(events)} events")

    def on_type_changed(self, text: str) -> None:
        """Filter by event type."""
        self.proxy.set_event_type("" if text == ALL_TYPES else text)

    def on_current_changed(self, current: object, _previous: object) -> None:
        """Show the selected event's JSON."""
        event = self.current_event()
        self.event_json.set_text(formatting.json_text(event.to_dict()) if event is not None else "")

    def current_event(self) -> HistoryEvent | None:
        """The selected event, if any."""
        index = self.table.currentIndex()
        if not index.isValid():
            return None
        row = self.proxy.mapToSource(index).row()
        return self.model.records[row] if 0 <= row < len(self.model.records) else None

    def select_seq(self, seq: int) -> bool:
        """Select the event `seq` (clearing filters that hide it); False if absent."""
        row = self.model.row_of_seq(seq)
        if row < 0:
            return False
        index = self.proxy.mapFromSource(self.model.index(row, 0))
        if not index.isValid():
            self.type_filter.setCurrentIndex(0)
            self.text_filter.clear()
            index = self.proxy.mapFromSource(self.model.index(row, 0))
        self.table.selectionModel().setCurrentIndex(
            index,
            QItemSelectionModel.SelectionFlag.ClearAndSelect
            | QItemSelectionModel.SelectionFlag.Rows,
        )
        self.table.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)
        return True
