"""The History tab: a page of the event table, filters by type and name (text or regex), the event's JSON.

The filtering and paging are `harvest_gui.inspect.history_filter` (no Qt); the table
model only ever holds one page, so a run with 50,000 events shows at once.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from harvest_gui.inspect import formatting
from harvest_gui.inspect.history_filter import (
    PAGE_SIZE,
    HistoryQuery,
    filter_history,
    page,
    page_count,
    page_of_seq,
)
from harvest_gui.models.history import HistoryModel
from harvest_gui.theme import error_style
from harvest_gui.views.payload import PayloadView

if TYPE_CHECKING:
    from harvest_engine import HistoryEvent

ALL_TYPES = "All event types"


class HistoryView(QWidget):
    """A run's events with filters and pages; selecting one shows its full JSON.

    Attributes:
        events: every event of the run.
        filtered: the events that pass the filters (all pages).
        page_index: the page shown (0-based).
        page_size: events per page.
    """

    def __init__(self, page_size: int = PAGE_SIZE) -> None:
        super().__init__()
        self.setObjectName("historyView")
        self.page_size = page_size
        self.events: list[HistoryEvent] = []
        self.filtered: list[HistoryEvent] = []
        self.page_index = 0
        self.model = HistoryModel()
        self.type_filter = QComboBox()
        self.type_filter.setObjectName("historyTypeFilter")
        self.type_filter.setAccessibleName("Event type filter")
        self.type_filter.addItem(ALL_TYPES)
        self.type_filter.currentTextChanged.connect(lambda _t: self.apply_filters())
        self.text_filter = QLineEdit()
        self.text_filter.setObjectName("historyTextFilter")
        self.text_filter.setAccessibleName("Event name filter")
        self.text_filter.setPlaceholderText(
            "Filter by activity, signal, timer or child name…"
        )
        self.text_filter.setClearButtonEnabled(True)
        self.text_filter.textChanged.connect(lambda _t: self.apply_filters())
        self.regex_check = QCheckBox("Re&gex")
        self.regex_check.setObjectName("historyRegex")
        self.regex_check.setAccessibleName(
            "Read the name filter as a regular expression"
        )
        self.regex_check.toggled.connect(lambda _c: self.apply_filters())
        self.filter_error = QLabel()
        self.filter_error.setObjectName("historyFilterError")
        self.filter_error.setTextFormat(Qt.TextFormat.PlainText)
        self.filter_error.setStyleSheet(error_style())
        self.filter_error.setWordWrap(True)
        self.filter_error.hide()
        self.count = QLabel()
        self.count.setObjectName("historyCount")
        self.count.setTextFormat(Qt.TextFormat.PlainText)
        self.prev_page = QPushButton("◀")
        self.prev_page.setObjectName("historyPrevPage")
        self.prev_page.setAccessibleName("Previous page of events")
        self.prev_page.setToolTip("Previous page of events")
        self.prev_page.clicked.connect(lambda: self.show_page(self.page_index - 1))
        self.page_box = QSpinBox()
        self.page_box.setObjectName("historyPage")
        self.page_box.setAccessibleName("Page of events")
        self.page_box.setMinimum(1)
        self.page_box.setKeyboardTracking(False)
        self.page_box.valueChanged.connect(lambda v: self.show_page(v - 1))
        self.page_total = QLabel()
        self.page_total.setObjectName("historyPageTotal")
        self.page_total.setTextFormat(Qt.TextFormat.PlainText)
        self.next_page = QPushButton("▶")
        self.next_page.setObjectName("historyNextPage")
        self.next_page.setAccessibleName("Next page of events")
        self.next_page.setToolTip("Next page of events")
        self.next_page.clicked.connect(lambda: self.show_page(self.page_index + 1))
        self.table = QTableView()
        self.table.setObjectName("historyTable")
        self.table.setAccessibleName("Event history")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.verticalHeader().setDefaultSectionSize(
            self.fontMetrics().height() + 6
        )
        # Seq, time and type take what their text needs (see `_fit_columns`); the
        # summary gets the rest of the window, elided, whole in its tooltip.
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.selectionModel().currentRowChanged.connect(self.on_current_changed)
        self.event_json = PayloadView("Selected event", "eventJson")
        bar = QHBoxLayout()
        bar.addWidget(self.type_filter)
        bar.addWidget(self.text_filter, 1)
        bar.addWidget(self.regex_check)
        bar.addWidget(self.count)
        bar.addWidget(self.prev_page)
        bar.addWidget(self.page_box)
        bar.addWidget(self.page_total)
        bar.addWidget(self.next_page)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addLayout(bar)
        top_layout.addWidget(self.filter_error)
        top_layout.addWidget(self.table)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("historySplitter")
        self.splitter.addWidget(top)
        self.splitter.addWidget(self.event_json)
        self.splitter.setSizes([400, 200])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter)
        self._update_paging()

    # -- what is shown ------------------------------------------------------------------

    def show_events(self, events: list[HistoryEvent]) -> None:
        """Show a run's events (new ones extend the last page, keeping the selection)."""
        self.events = list(events)
        types = sorted({e.type for e in self.events})
        known = [
            self.type_filter.itemText(i) for i in range(1, self.type_filter.count())
        ]
        if types != known:
            current = self.type_filter.currentText()
            self.type_filter.blockSignals(True)
            self.type_filter.clear()
            self.type_filter.addItem(ALL_TYPES)
            self.type_filter.addItems(types)
            self.type_filter.setCurrentIndex(max(self.type_filter.findText(current), 0))
            self.type_filter.blockSignals(False)
        self.apply_filters(keep_page=True)

    def reset_filters(self) -> None:
        """Clear the type, name and regex filters (another run is about to show)."""
        for widget in (self.type_filter, self.text_filter, self.regex_check):
            widget.blockSignals(True)
        self.type_filter.setCurrentIndex(0)
        self.text_filter.clear()
        self.regex_check.setChecked(False)
        for widget in (self.type_filter, self.text_filter, self.regex_check):
            widget.blockSignals(False)
        self.apply_filters()

    def query(self) -> HistoryQuery:
        """The filters as a `HistoryQuery`."""
        chosen = self.type_filter.currentText()
        types = frozenset() if chosen in ("", ALL_TYPES) else frozenset({chosen})
        return HistoryQuery(
            types=types,
            name=self.text_filter.text().strip(),
            regex=self.regex_check.isChecked(),
        )

    def apply_filters(self, keep_page: bool = False) -> None:
        """Re-filter the events; an invalid regex is reported and the name filter ignored."""
        q = self.query()
        try:
            self.filtered = filter_history(self.events, q)
            self.filter_error.hide()
        except re.error as exc:
            self.filter_error.setText(
                f"The name filter is not a valid regular expression: {exc}"
            )
            self.filter_error.show()
            self.filtered = filter_history(self.events, HistoryQuery(types=q.types))
        self.show_page(self.page_index if keep_page else 0, force=True)

    def show_page(self, index: int, force: bool = False) -> None:
        """Show page `index` (0-based, clamped) of the filtered events."""
        index = max(0, min(index, page_count(len(self.filtered), self.page_size) - 1))
        if index == self.page_index and not force:
            return
        self.page_index = index
        selected = self.current_event()
        self.model.show(page(self.filtered, index, self.page_size))
        if selected is not None and self.table.currentIndex().row() < 0:
            row = self.model.row_of_seq(selected.seq)
            if row >= 0:
                self._select_row(row, scroll=False)
        self._update_paging()
        self._fit_columns()
        self.on_current_changed(None, None)

    def _fit_columns(self) -> None:
        """Size seq, time and type to the page's text so the summary keeps the rest.

        Measured from the page's distinct texts (the longest seq, one time, each
        type) rather than `resizeColumnToContents`, which asks every row of a
        1,000-event page for its size hint at each refresh.
        """
        records = self.model.records
        if not records:
            return
        seq = str(max(e.seq for e in records))
        time_text = str(self.model.data(self.model.index(0, 1)) or "")
        types = {e.type for e in records}
        cells = self.table.fontMetrics()
        titles = self.table.horizontalHeader().fontMetrics()
        pad = cells.horizontalAdvance("MM")  # the cell's margins and a little air
        header = self.table.horizontalHeader()
        for col, texts in enumerate(([seq], [time_text], types)):
            title = str(self.model.headerData(col, Qt.Orientation.Horizontal) or "")
            wanted = max(
                titles.horizontalAdvance(title),
                *(cells.horizontalAdvance(t) for t in texts),
            )
            header.resizeSection(col, wanted + pad)

    def _update_paging(self) -> None:
        pages = page_count(len(self.filtered), self.page_size)
        self.page_box.blockSignals(True)
        self.page_box.setMaximum(pages)
        self.page_box.setValue(self.page_index + 1)
        self.page_box.blockSignals(False)
        self.page_total.setText(f"of {pages:,}")
        self.prev_page.setEnabled(self.page_index > 0)
        self.next_page.setEnabled(self.page_index < pages - 1)
        for w in (self.prev_page, self.page_box, self.page_total, self.next_page):
            w.setVisible(pages > 1)
        total = len(self.events)
        shown = len(self.filtered)
        self.count.setText(
            f"{total:,} events" if shown == total else f"{shown:,} of {total:,} events"
        )

    # -- selection ----------------------------------------------------------------------

    def on_current_changed(self, _current: object, _previous: object) -> None:
        """Show the selected event's JSON."""
        event = self.current_event()
        self.event_json.set_text(
            formatting.json_text(event.to_dict()) if event is not None else ""
        )

    def current_event(self) -> HistoryEvent | None:
        """The selected event, if any."""
        row = self.table.currentIndex().row()
        return self.model.records[row] if 0 <= row < len(self.model.records) else None

    def select_seq(self, seq: int) -> bool:
        """Select the event `seq` (turning to its page, clearing filters that hide it)."""
        index = page_of_seq(self.filtered, seq, self.page_size)
        if index is None:
            self.type_filter.blockSignals(True)
            self.type_filter.setCurrentIndex(0)
            self.type_filter.blockSignals(False)
            self.text_filter.blockSignals(True)
            self.text_filter.clear()
            self.text_filter.blockSignals(False)
            self.apply_filters()
            index = page_of_seq(self.filtered, seq, self.page_size)
            if index is None:
                return False
        self.show_page(index)
        row = self.model.row_of_seq(seq)
        if row < 0:
            return False
        self._select_row(row, scroll=True)
        return True

    def _select_row(self, row: int, scroll: bool) -> None:
        index = self.model.index(row, 0)
        self.table.selectionModel().setCurrentIndex(
            index,
            QItemSelectionModel.SelectionFlag.ClearAndSelect
            | QItemSelectionModel.SelectionFlag.Rows,
        )
        if scroll:
            self.table.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)
