"""RunListModel: the run list, paged lazily over the engine's cursor pages, updated live."""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    Signal,
)

from harvest_engine import ExecutionFilter
from harvest_gui.inspect import formatting
from harvest_gui.theme import state_colour

if TYPE_CHECKING:
    from harvest_engine import ExecutionSummary
    from harvest_gui.session import Session

PAGE_SIZE = 200
REFRESH_PAGE = 1000
REFRESH_MARGIN = 50
"""Rows a refresh reads past the loaded ones, for runs that arrived since."""
SORT_LOAD_CAP = 5_000
"""Rows a sort loads at most: the engine lists newest first only, so a sort by any
column is done here over the loaded rows, and loads the list up to this many first.
Kept modest: a live refresh re-reads every loaded row (5,000 rows: about 0.2 s)."""
COLUMNS = (
    "Workflow",
    "Workflow ID",
    "Exec ID",
    "State",
    "Started",
    "Closed",
    "Duration",
    "Attempt",
    "Summary",
    "Search attributes",
)
COL_STATE = 3
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
"""Role giving a raw, comparable value per cell (for sorting)."""
EXEC_ID_ROLE = Qt.ItemDataRole.UserRole + 2
"""Role giving the row's exec id text."""
DAMAGED_MARK = "⚠ DAMAGED"
"""The state cell of a run the engine flags as damaged (never shown as sound)."""
PAUSED_MARK = "⏸ paused"
"""After a paused run's state: it takes no decision until unpaused."""

AnyIndex = QModelIndex | QPersistentModelIndex


COL_STARTED, COL_CLOSED = 4, 5


def short_when(at: datetime | None, today: date | None = None) -> str:
    """A run-list time that fits a narrow column: the time today, else the day.

    ``14:03:07`` today, ``12-05 14:03`` earlier this year, ``2025-12-05``
    before; the tooltip has the full time.
    """
    if at is None:
        return ""
    local = at.astimezone()
    today = today or datetime.now().astimezone().date()
    if local.date() == today:
        return local.strftime("%H:%M:%S")
    if local.year == today.year:
        return local.strftime("%m-%d %H:%M")
    return local.strftime("%Y-%m-%d")


def _duration(row: ExecutionSummary) -> float | None:
    if row.started_at is None or row.closed_at is None:
        return None
    return (row.closed_at - row.started_at).total_seconds()


class RunListModel(QAbstractTableModel):
    """Runs newest first; `fetchMore` loads the next cursor page.

    Attributes:
        COLUMNS: the column titles.

    Args:
        session: where the rows come from.
        page_size: rows per page.

    """

    COLUMNS = COLUMNS
    held_changed = Signal(int)
    """How many new runs are held back above the list (0: none)."""

    def __init__(self, session: Session, page_size: int = PAGE_SIZE) -> None:
        super().__init__()
        self.session = session
        self.page_size = page_size
        self.rows: list[ExecutionSummary] = []
        # Runs newer than the top row, not shown until `show_held`: inserting
        # them would move every row under the user's pointer (issue 17 §3).
        self.held: list[ExecutionSummary] = []
        self.hold_new = True
        self._cells: list[tuple[str, ...]] = []
        self._filter = ExecutionFilter()
        self._next: int | None = None
        self._fetching = False
        self.reload()

    # -- loading ------------------------------------------------------------------

    @property
    def filter(self) -> ExecutionFilter:
        """The filter the rows match (without limit and cursor)."""
        return self._filter

    def set_filter(self, flt: ExecutionFilter) -> None:
        """Show runs matching `flt`, starting again at the newest."""
        self._filter = flt
        self.reload()

    def reload(self) -> None:
        """Drop every row and load the first page."""
        page = self.session.list_executions(
            self._filter.limit(self.page_size).before(None)
        )
        self.beginResetModel()
        self.rows = list(page.executions)
        self._cells = [self._format(r) for r in self.rows]
        self._next = page.next
        self.endResetModel()
        self._set_held([])

    def canFetchMore(self, parent: AnyIndex = QModelIndex()) -> bool:  # noqa: B008
        """Whether another page exists."""
        return not parent.isValid() and self._next is not None

    def fetchMore(self, parent: AnyIndex = QModelIndex()) -> None:  # noqa: B008
        """Append the next page."""
        if parent.isValid() or self._next is None or self._fetching:
            return
        self._fetching = True  # a view or tester may ask again while rows go in
        try:
            page = self.session.list_executions(
                self._filter.limit(self.page_size).before(self._next)
            )
            self._next = page.next if page.executions else None
            if page.executions:
                first = len(self.rows)
                self.beginInsertRows(
                    QModelIndex(), first, first + len(page.executions) - 1
                )
                self.rows.extend(page.executions)
                self._cells.extend(self._format(r) for r in page.executions)
                self.endInsertRows()
        finally:
            self._fetching = False

    def load_all(self, cap: int = SORT_LOAD_CAP) -> bool:
        """Load pages until every matching run is listed or more than `cap` are; all loaded?

        The public listing returns runs newest first only, so a sort over the
        loaded rows is a sort over the list only once every row is loaded.
        """
        size = self.page_size
        try:
            while self._next is not None and len(self.rows) <= cap:
                # Big pages (a few queries, not dozens); one row past the cap
                # tells "exactly `cap` match" from "more match".
                self.page_size = min(REFRESH_PAGE, cap + 1 - len(self.rows))
                self.fetchMore()
        finally:
            self.page_size = size
        return self._next is None

    def refresh(self) -> None:
        """Re-read the loaded range and apply the difference row by row.

        New runs are inserted, runs that left the filter removed and changed
        ones updated in place, so selection and scroll position survive.
        """
        bottom = self.rows[-1].cursor if self.rows else None
        fresh: list[ExecutionSummary] = []
        cursor: int | None = None
        next_cursor: int | None = None
        while True:
            # The loaded range plus room for a few new runs: a refresh that reads
            # 1,000 rows to re-check 200 costs the UI thread tens of ms per commit.
            limit = (
                min(REFRESH_PAGE, len(self.rows) + REFRESH_MARGIN)
                if bottom is not None
                else self.page_size
            )
            page = self.session.list_executions(
                self._filter.limit(limit).before(cursor)
            )
            fresh.extend(page.executions)
            next_cursor = page.next
            if page.next is None or bottom is None or page.next <= bottom:
                break
            cursor = page.next
        if bottom is not None:
            fresh = [r for r in fresh if r.cursor >= bottom]
            keep_next = self._next
        else:
            keep_next = next_cursor
        fresh = self._hold_new_runs(fresh)
        self._merge(fresh)
        self._next = keep_next if bottom is not None else next_cursor

    def _hold_new_runs(self, fresh: list[ExecutionSummary]) -> list[ExecutionSummary]:
        """Hold the runs above the top row (rows stay under the pointer); what to merge.

        Only while some listed row is still there: when every one left the
        filter, an empty list under a "new runs" bar helps nobody, and the
        new runs are the list. Runs not held are never also held, so
        `show_held` cannot list one twice.
        """
        if not (self.hold_new and self.rows):
            self._set_held([])
            return fresh
        top = self.rows[0].cursor
        kept = [r for r in fresh if r.cursor <= top]
        if not kept:
            self._set_held([])
            return fresh
        self._set_held([r for r in fresh if r.cursor > top])
        return kept

    def show_held(self) -> int:
        """Insert the held new runs at the top; how many went in."""
        held = self.held
        if not held:
            return 0
        self._set_held([])
        self._merge(sorted([*held, *self.rows], key=lambda r: r.cursor, reverse=True))
        return len(held)

    def held_row_of(self, exec_id: str) -> int:
        """Where `exec_id` is among the held runs, or -1."""
        for i, r in enumerate(self.held):
            if str(r.exec_id) == exec_id:
                return i
        return -1

    def _set_held(self, held: list[ExecutionSummary]) -> None:
        before = len(self.held)
        self.held = held
        if len(held) != before:
            self.held_changed.emit(len(held))

    def _merge(self, fresh: list[ExecutionSummary]) -> None:
        rows, i, j = self.rows, 0, 0
        while i < len(rows) or j < len(fresh):
            if j < len(fresh) and (i >= len(rows) or fresh[j].cursor > rows[i].cursor):
                k = j
                while k < len(fresh) and (
                    i >= len(rows) or fresh[k].cursor > rows[i].cursor
                ):
                    k += 1
                self.beginInsertRows(QModelIndex(), i, i + k - j - 1)
                rows[i:i] = fresh[j:k]
                self._cells[i:i] = [self._format(r) for r in fresh[j:k]]
                self.endInsertRows()
                i += k - j
                j = k
            elif j >= len(fresh) or rows[i].cursor > fresh[j].cursor:
                k = i
                while k < len(rows) and (
                    j >= len(fresh) or rows[k].cursor > fresh[j].cursor
                ):
                    k += 1
                self.beginRemoveRows(QModelIndex(), i, k - 1)
                del rows[i:k]
                del self._cells[i:k]
                self.endRemoveRows()
            else:
                if rows[i] != fresh[j]:
                    rows[i] = fresh[j]
                    self._cells[i] = self._format(fresh[j])
                    self.dataChanged.emit(
                        self.index(i, 0), self.index(i, len(COLUMNS) - 1)
                    )
                i += 1
                j += 1

    # -- the Qt model ---------------------------------------------------------------

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        """Rows loaded so far."""
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        """The GUI.md columns."""
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(
        self,
        section: int,
        orientation: Qt.Orientation,
        role: int = Qt.ItemDataRole.DisplayRole,
    ) -> Any:
        """Column titles."""
        if (
            role == Qt.ItemDataRole.DisplayRole
            and orientation == Qt.Orientation.Horizontal
            and 0 <= section < len(COLUMNS)
        ):
            return COLUMNS[section]
        return None

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Precomputed text, state colours, raw values for sorting."""
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        row, col = index.row(), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._cells[row][col]
        damaged = self.rows[row].damaged
        if role == Qt.ItemDataRole.ToolTipRole:
            if damaged is not None and col == COL_STATE:
                return formatting.tooltip(
                    f"Damaged: {formatting.middle(damaged, 2000)}\n"
                    f"Stored state: {formatting.middle(str(self.rows[row].state), 200)}"
                )
            if col in (COL_STARTED, COL_CLOSED):
                r = self.rows[row]
                return formatting.when(
                    r.started_at if col == COL_STARTED else r.closed_at
                )
            summary = self.rows[row].summary
            text = self._cells[row][col]
            if summary:  # the run's label (StartOptions(summary=)) on every cell
                text = f"{text}\nSummary: {formatting.middle(summary, 500)}"
            return formatting.tooltip(text)
        if role == Qt.ItemDataRole.ForegroundRole and col == COL_STATE:
            return state_colour("DAMAGED" if damaged else self.rows[row].state)
        if role == SORT_ROLE:
            return self._sort_value(row, col)
        if role == EXEC_ID_ROLE:
            return str(self.rows[row].exec_id)
        return None

    def damaged_of(self, exec_id: str) -> str | None:
        """Why the listing flags `exec_id` as damaged; None if sound or not loaded."""
        for r in (*self.rows, *self.held):
            if str(r.exec_id) == exec_id:
                return r.damaged
        return None

    def row_of(self, exec_id: str) -> int:
        """The row showing `exec_id`, or -1 if it is not loaded."""
        for i, r in enumerate(self.rows):
            if str(r.exec_id) == exec_id:
                return i
        return -1

    @staticmethod
    def _format(r: ExecutionSummary) -> tuple[str, ...]:
        return (
            formatting.middle(r.workflow_name, 200),
            formatting.middle(r.workflow_id, 400),  # a megabyte id never reaches a cell
            str(r.exec_id),
            DAMAGED_MARK if r.damaged is not None else _state_text(r),
            short_when(r.started_at),
            short_when(r.closed_at),
            formatting.duration(_duration(r)),
            str(r.attempt),
            formatting.middle((r.summary or "").replace("\n", " "), 200),
            formatting.attributes_text(r.search_attributes),
        )

    def _sort_value(self, row: int, col: int) -> Any:
        r = self.rows[row]
        if col == 4:
            return r.started_at.timestamp() if r.started_at else 0.0
        if col == 5:
            return r.closed_at.timestamp() if r.closed_at else float("inf")
        if col == 6:
            d = _duration(r)
            return d if d is not None else float("inf")
        if col == 7:
            return r.attempt
        return self._cells[row][col]


def _state_text(r: ExecutionSummary) -> str:
    """A sound run's state cell: a paused run (`rt.pause`) says so."""
    state = formatting.middle(r.state, 40)
    return f"{state} {PAUSED_MARK}" if r.paused else state
