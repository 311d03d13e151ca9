"""The run list's filter bar: its controls and the `ExecutionFilter` they describe."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from PySide6.QtCore import QDateTime, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDateTimeEdit,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
)

from harvest_engine import ExecutionFilter
from harvest_gui.inspect.run_filters import parse_search
from harvest_gui.views.name_filter import NameFilterEdit

DATE_FORMAT = "yyyy-MM-dd HH:mm"
"""ISO-like, the same in every locale (the locale default read "2 12 2026 12:31")."""

STATES = (
    "RUNNING",
    "ENQUEUED",
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TERMINATED",
    "TIMED_OUT",
    "CONTINUED_AS_NEW",
)
STATE_COLUMNS = 4
"""State boxes per row of the counts grid."""


def _aware(value: QDateTime) -> datetime:
    """A date edit's local wall time as an aware datetime (the filter compares instants)."""
    py = (
        value.toPython()
    )  # typed `object` in PySide6's stubs: it may also be a date or time
    if not isinstance(py, datetime):
        raise TypeError(f"expected a datetime from QDateTime.toPython(), got {py!r}")
    return py.astimezone()


class RunFilterBar:
    """The filters above the run table, mixed into `RunListView` (a QWidget).

    The controls are attributes of the view itself, as they were before this
    part of it moved here: tests and the window reach them as
    ``run_list.name_filter``, ``run_list.state_boxes`` and so on. The view
    lays out `filter_grid` and `counts_row` and defines `apply_filters`.
    """

    if TYPE_CHECKING:

        def apply_filters(self) -> None:
            """Reload the list with the bar's filter (RunListView)."""

    def _build_filters(self) -> None:
        self.name_filter = NameFilterEdit()
        self.name_filter.chosen.connect(lambda _text: self.apply_filters())
        self.seen_names: set[str] = set()  # every name listed so far, filtered or not
        self.prefix_filter = QLineEdit()
        self.prefix_filter.setObjectName("filterPrefix")
        self.prefix_filter.setPlaceholderText("workflow id prefix")
        self.prefix_filter.setAccessibleName("Workflow id prefix filter")
        self.search_filter = QLineEdit()
        self.search_filter.setObjectName("filterSearch")
        self.search_filter.setPlaceholderText("search attribute: key=value")
        self.search_filter.setAccessibleName("Search attribute filter")
        # "Started after" made this row, and with it the run list, too wide to sit
        # beside the detail pane on a 1024 px screen (issue 31 §12).
        self.after_check = QCheckBox("Started")
        self.after_check.setObjectName("filterAfterOn")
        self.after_check.setToolTip("Only runs started at or after this time")
        self.after = QDateTimeEdit(QDateTime.currentDateTime().addDays(-1))
        self.after.setObjectName("filterAfter")
        self.after.setAccessibleName("Started after")
        self.after.setCalendarPopup(True)
        self.after.setDisplayFormat(DATE_FORMAT)
        self.before_check = QCheckBox("to")
        self.before_check.setObjectName("filterBeforeOn")
        self.before_check.setToolTip("Only runs started before this time")
        self.before = QDateTimeEdit(QDateTime.currentDateTime().addDays(1))
        self.before.setObjectName("filterBefore")
        self.before.setAccessibleName("Started before")
        self.before.setCalendarPopup(True)
        self.before.setDisplayFormat(DATE_FORMAT)
        self.apply_button = QPushButton("&Apply")
        self.apply_button.setObjectName("filterApply")
        self.apply_button.setAccessibleName("Apply filters")
        self.clear_button = QPushButton("Clear")
        self.clear_button.setObjectName("filterClear")
        self.clear_button.setAccessibleName("Clear filters")
        for edit in (self.name_filter, self.prefix_filter, self.search_filter):
            edit.setClearButtonEnabled(True)
            edit.returnPressed.connect(self.apply_filters)
        self.apply_button.clicked.connect(self.apply_filters)
        self.clear_button.clicked.connect(self.clear_filters)
        grid = QGridLayout()
        grid.addWidget(self.name_filter, 0, 0)
        grid.addWidget(self.prefix_filter, 0, 1)
        grid.addWidget(self.search_filter, 0, 2)
        grid.addWidget(self.apply_button, 0, 3)
        time_row = QHBoxLayout()
        time_row.addWidget(self.after_check)
        time_row.addWidget(self.after)
        time_row.addWidget(self.before_check)
        time_row.addWidget(self.before)
        time_row.addStretch(1)
        grid.addLayout(time_row, 1, 0, 1, 3)
        grid.addWidget(self.clear_button, 1, 3)
        self.filter_grid = grid
        # Two rows of four: seven state boxes on one line made the list alone 850 px
        # wide at least, and the window wider than a 1366 px screen (issue 17).
        self.counts_row = QGridLayout()
        self.state_boxes: dict[str, QCheckBox] = {}
        for i, state in enumerate(STATES):
            box = QCheckBox(state)
            box.setObjectName(f"state_{state}")
            box.setAccessibleName(f"Show {state.lower()} runs")
            box.toggled.connect(self.apply_filters)
            self.state_boxes[state] = box
            self.counts_row.addWidget(box, i // STATE_COLUMNS, i % STATE_COLUMNS)
        # Paused is a flag on a RUNNING run (rt.pause), not a state: its own box.
        self.paused_box = QCheckBox("PAUSED")
        self.paused_box.setObjectName("state_PAUSED")
        self.paused_box.setAccessibleName("Show paused runs")
        self.paused_box.toggled.connect(self.apply_filters)
        self.counts_row.addWidget(
            self.paused_box, len(STATES) // STATE_COLUMNS, len(STATES) % STATE_COLUMNS
        )
        self.total = QLabel()
        self.total.setObjectName("runTotal")
        self.total.setTextFormat(Qt.TextFormat.PlainText)
        # In the last row's free cell; on a row of its own when the boxes fill the
        # last row (ENQUEUED made eight: the total was drawn over CONTINUED_AS_NEW).
        self.counts_row.addWidget(
            self.total,
            (len(STATES) + 1) // STATE_COLUMNS,  # a cell the boxes leave free
            STATE_COLUMNS - 1,
            Qt.AlignmentFlag.AlignRight,
        )
        self.counts_row.setColumnStretch(STATE_COLUMNS, 1)

    def build_filter(self) -> ExecutionFilter:
        """The filter the bar describes.

        Raises:
            ValueError: a malformed search attribute filter.
            HarvestError: the engine refused a value (InvalidFilter, InvalidSearchAttribute).

        """
        flt = ExecutionFilter()
        if self.name_filter.text().strip():
            flt = flt.workflow_name(self.name_filter.text().strip())
        if self.prefix_filter.text():
            flt = flt.workflow_id_prefix(self.prefix_filter.text())
        search = parse_search(self.search_filter.text())
        if search is not None:
            flt = flt.search_attribute(*search)
        if self.after_check.isChecked():
            flt = flt.started_after(_aware(self.after.dateTime()))
        if self.before_check.isChecked():
            flt = flt.started_before(_aware(self.before.dateTime()))
        states = [s for s, box in self.state_boxes.items() if box.isChecked()]
        if states:
            flt = flt.state(*states)
        if self.paused_box.isChecked():
            flt = flt.paused(True)
        return flt

    def filters_active(self) -> bool:
        """Whether any filter of the bar narrows the list."""
        return any(
            e.text().strip()
            for e in (self.name_filter, self.prefix_filter, self.search_filter)
        ) or any(
            box.isChecked()
            for box in [
                self.after_check,
                self.before_check,
                self.paused_box,
                *self.state_boxes.values(),
            ]
        )

    def clear_filters(self) -> None:
        """Empty every filter."""
        for edit in (self.name_filter, self.prefix_filter, self.search_filter):
            edit.clear()
        for box in [
            self.after_check,
            self.before_check,
            self.paused_box,
            *self.state_boxes.values(),
        ]:
            box.blockSignals(True)
            box.setChecked(False)
            box.blockSignals(False)
        self.apply_filters()

    def focus_filter(self) -> None:
        """Put the cursor in the first filter (Ctrl+F)."""
        self.name_filter.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.name_filter.selectAll()
