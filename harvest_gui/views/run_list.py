"""RunListView: the filter bar, per-state counts and the lazily paged, sortable run table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import (
    QItemSelectionModel,
    QModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from harvest_engine import HarvestError
from harvest_gui.forms.commands import workflow_infos
from harvest_gui.inspect import formatting
from harvest_gui.inspect.run_filters import (
    count_matching,
    paused_count,
    unknown_name_hint,
)
from harvest_gui.models.run_list import (
    EXEC_ID_ROLE,
    SORT_LOAD_CAP,
    SORT_ROLE,
    RunListModel,
)
from harvest_gui.theme import state_colour
from harvest_gui.views.new_runs_hold import NewRunsHold
from harvest_gui.views.run_list_filters import RunFilterBar
from harvest_gui.views.tables import fit_columns_to_titles, record_table

if TYPE_CHECKING:
    from harvest_gui.session import Session

EXEC_ID_SAMPLE = "00000000-0000-0000-0000-000000000000"
VISUAL_ORDER = (1, 3, 4, 5, 6, 0, 8, 2, 7, 9)
"""Model columns in the order shown: Workflow ID, State, Started, Closed, Duration,
Workflow, Summary (the run's label), Exec ID, Attempt, Search attributes."""
SORT_TIP = (
    "Click a title to sort by it (again: the other way). The file lists runs newest "
    f"first, so a sort loads the matching runs first (up to {SORT_LOAD_CAP:,}) and "
    "sorts the loaded rows; past that a note says only the loaded rows are sorted."
)


class RunListView(RunFilterBar, QWidget):
    """Filters on top, counts per state, then the run table.

    Signals:
        run_selected(object): the exec id text of the selected run, or None.
    """

    run_selected = Signal(object)

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.setObjectName("runList")
        self.session = session
        self.model = RunListModel(session)
        self.proxy = QSortFilterProxyModel()
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.proxy.setDynamicSortFilter(True)
        self._build_filters()
        self._build_notes()
        self.table = record_table("runTable", "Workflow runs")
        self.table.setModel(self.proxy)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.table.horizontalHeader()
        header.setSortIndicatorShown(True)
        header.setSortIndicator(
            -1, Qt.SortOrder.AscendingOrder
        )  # source order: newest first
        self.table.setSortingEnabled(True)
        self.sort_cap = SORT_LOAD_CAP
        header.sortIndicatorChanged.connect(self.on_sort_changed)
        header.setToolTip(SORT_TIP)
        metrics = self.table.fontMetrics()
        widths = (
            140,
            100,
            # Half an id (it elides in the middle); the tooltip has all of it.
            metrics.horizontalAdvance(EXEC_ID_SAMPLE[:18]) + 16,
            metrics.horizontalAdvance("COMPLETED") + 16,
            metrics.horizontalAdvance("00:00:00") + 16,
            metrics.horizontalAdvance("00:00:00") + 16,
            metrics.horizontalAdvance("4 m 05 s") + 16,
            60,
            160,
        )
        for col, width in enumerate(widths):
            self.table.setColumnWidth(col, width)
        fit_columns_to_titles(self.table)  # "Attempt" was cut at 60 px
        # Times first (issue 31 §12): beside the detail pane on a 1024 px screen the
        # id, state, started, closed and duration are in view without scrolling;
        # the workflow name, exec id and the rest follow.
        for visual, col in enumerate(VISUAL_ORDER):
            header.moveSection(header.visualIndex(col), visual)
        # A cut id keeps both ends readable: "86dc6b02-e9…b248b", never a bare prefix.
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.table.selectionModel().currentRowChanged.connect(self.on_current_changed)
        for signal in (
            self.model.modelReset,
            self.model.rowsInserted,
            self.model.rowsRemoved,
        ):
            signal.connect(self.update_empty_note)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self.filter_grid)
        layout.addLayout(self.counts_row)
        layout.addWidget(self.message)
        layout.addWidget(self.empty_note)
        layout.addWidget(self.sort_note)
        layout.addWidget(self.table, 1)
        self.new_runs = NewRunsHold(self.table, self.model, self.proxy)
        self.new_runs_bar = self.new_runs.bar
        self.session.counts_ready.connect(self.show_counts)
        self.update_counts()
        self.update_empty_note()

    # -- building -----------------------------------------------------------------------

    def _build_notes(self) -> None:
        """The lines between the filters and the table: errors, the empty note, the sort note."""
        self.message = QLabel()
        self.message.setObjectName("filterMessage")
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.hide()
        self.empty_note = QLabel()
        self.empty_note.setObjectName("runListEmpty")
        self.empty_note.setTextFormat(Qt.TextFormat.PlainText)
        self.empty_note.setWordWrap(True)
        self.empty_note.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_note.setContentsMargins(12, 24, 12, 24)
        self.empty_note.hide()
        self.sort_note = QLabel()
        self.sort_note.setObjectName("runListSortNote")
        self.sort_note.setTextFormat(Qt.TextFormat.PlainText)
        self.sort_note.setWordWrap(True)
        self.sort_note.hide()
        self.restyle()

    def restyle(self) -> None:
        """Apply the current theme's state colours (after a theme switch too)."""
        for state, box in [*self.state_boxes.items(), ("PAUSED", self.paused_box)]:
            box.setStyleSheet(f"color: {state_colour(state).name()};")
        self.message.setStyleSheet(f"color: {state_colour('FAILED').name()};")
        top, bottom = (
            self.model.index(0, 0),
            self.model.index(self.model.rowCount() - 1, 0),
        )
        if self.model.rowCount():
            self.model.dataChanged.emit(
                top, bottom.siblingAtColumn(len(self.model.COLUMNS) - 1)
            )

    # -- filters --------------------------------------------------------------------------

    def apply_filters(self) -> None:
        """Reload the list with the bar's filter; a bad value is named above the table."""
        try:
            flt = self.build_filter()
        except (ValueError, HarvestError) as exc:
            self.message.setText(str(exc))
            self.message.show()
            return
        self.message.hide()
        selected = self.selected_exec_id()
        self.model.set_filter(flt)
        self.update_empty_note()
        self.update_counts()
        self._hint_unknown_name()
        self.load_for_sort()
        if selected is not None:
            self.select_exec_id(selected)
        if self.selected_exec_id() != selected:
            self.run_selected.emit(self.selected_exec_id())

    # -- sorting ------------------------------------------------------------------------------

    def on_sort_changed(self, column: int, _order: Qt.SortOrder) -> None:
        """A header click: sort the whole list, not only the pages loaded so far."""
        self.load_for_sort(column)

    def load_for_sort(self, column: int | None = None) -> None:
        """While sorted, load every matching run (up to `sort_cap`); say so if more match.

        The engine lists runs newest first only, so the sort is done over the
        loaded rows: loading them all first makes it a sort of the list, and
        past the cap the note says plainly that only the loaded rows are sorted.
        """
        column = self.proxy.sortColumn() if column is None else column
        if column < 0:
            self.sort_note.hide()
            return
        if self.model.load_all(self.sort_cap):
            self.sort_note.hide()
            return
        self.sort_note.setText(
            f"Sorted among the newest {self.model.rowCount():,} runs only: the list "
            "sorts the runs it has loaded, and more match. Filter to narrow the list."
        )
        self.sort_note.show()

    def update_empty_note(self) -> None:
        """Say why the list is empty, and what brings runs into it."""
        if self.model.rowCount():
            self.empty_note.hide()
            return
        if self.filters_active():
            text = "No runs match these filters. Clear shows every run in the file."
        elif self.session.can_write:
            text = (
                "This file holds no runs yet. Start one with Run ▸ Start workflow (Ctrl+N); "
                "runs your app starts in this window appear here as they happen."
            )
        else:
            text = (
                "This file holds no runs yet. Opened read-only, the list follows the "
                "file: runs another process starts appear here within a second."
            )
        self.empty_note.setText(text)
        self.empty_note.show()

    # -- live updates ------------------------------------------------------------------------

    def refresh(self) -> None:
        """Merge the file's changes into the list and the counts."""
        self.model.refresh()
        self.update_counts()

    def update_counts(self) -> None:
        """Ask for fresh runs-per-state counts (they arrive in `show_counts`)."""
        self.session.request_counts()

    def show_counts(self, counts: dict[str, int]) -> None:
        """Runs per state beside each state box, among the runs the filters match.

        Unfiltered, the counts are the file's; filtered, each box counts the
        matching runs in its state (as if no state were chosen) and the total
        says how many match out of the file's.
        """
        in_file = sum(counts.values())
        self._update_names()
        shown = counts
        total = formatting.count(in_file, "run")
        if self.filters_active():
            try:
                matched = count_matching(
                    self.session.list_executions, self.build_filter()
                )
            except (ValueError, HarvestError):  # the bar reports a bad filter itself
                matched = None
            if matched is not None:
                chosen = [s for s, box in self.state_boxes.items() if box.isChecked()]
                shown = matched.by_state
                n = sum(shown.get(s, 0) for s in chosen) if chosen else matched.total
                more = "+" if matched.capped else ""
                total = f"{n:,}{more} of {formatting.count(in_file, 'run')} match"
        for state, box in self.state_boxes.items():
            box.setText(f"{state} {shown.get(state, 0):,}")
        flt = self.build_filter() if self.filters_active() else None
        self.paused_box.setText(
            f"PAUSED {paused_count(self.session.list_executions, flt)}"
        )
        self.total.setText(total)

    def known_names(self) -> list[str]:
        """Workflow names worth offering: registered ones and those of listed runs."""
        self.seen_names.update(run.workflow_name for run in self.model.rows)
        names = {info.name for info in workflow_infos(self.session)}
        return sorted(names | self.seen_names)

    def _update_names(self) -> None:
        self.name_filter.offer(self.known_names())

    def _hint_unknown_name(self) -> None:
        """Say which names there are when the typed one matches no run."""
        if self.model.rowCount():
            return
        hint = unknown_name_hint(self.name_filter.text(), self.known_names())
        if hint is not None:
            self.message.setText(hint)
            self.message.show()

    def show_new_runs(self) -> None:
        """Put the held new runs in the list (the bar's click, F5)."""
        self.new_runs.show_new_runs()

    # -- selection -----------------------------------------------------------------------------

    def selected_exec_id(self) -> str | None:
        """The exec id of the current row."""
        index = self.table.currentIndex()
        if not index.isValid():
            return None
        value = self.proxy.data(index, EXEC_ID_ROLE)
        return str(value) if value is not None else None

    def select_exec_id(self, exec_id: str) -> bool:
        """Make `exec_id` the current row (loading pages until found); False if not listed."""
        if self.model.held_row_of(exec_id) >= 0:
            self.model.show_held()
        row = self.model.row_of(exec_id)
        pages = 0
        while row < 0 and self.model.canFetchMore() and pages < 50:
            self.model.fetchMore()
            row = self.model.row_of(exec_id)
            pages += 1
        if row < 0:
            return False
        index = self.proxy.mapFromSource(self.model.index(row, 0))
        self.table.selectionModel().setCurrentIndex(
            index,
            QItemSelectionModel.SelectionFlag.ClearAndSelect
            | QItemSelectionModel.SelectionFlag.Rows,
        )
        self.table.scrollTo(index)
        return True

    def on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        """Announce the newly selected run."""
        self.run_selected.emit(self.selected_exec_id())
