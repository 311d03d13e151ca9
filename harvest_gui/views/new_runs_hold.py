"""NewRunsHold: new runs wait behind a floating "▲ N new runs" bar while a hand is on the run list."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QModelIndex, QObject
from PySide6.QtWidgets import QPushButton
from shiboken6 import isValid

if TYPE_CHECKING:
    from PySide6.QtCore import QSortFilterProxyModel
    from PySide6.QtWidgets import QTableView

    from harvest_gui.models.run_list import RunListModel

TOUCHES = (
    QEvent.Type.MouseButtonPress,
    QEvent.Type.KeyPress,
    QEvent.Type.Wheel,
)
"""Events that show a hand on the run list (new runs are held from then on)."""


class NewRunsHold(QObject):
    """When the run list holds new runs back, and the bar that counts and shows them.

    Nothing is held until the user touches the list (a click, a key, the
    wheel, a scroll): at first open new runs simply go in, so counts and rows
    agree and no bar greets a newcomer (issue 31 §14); once a hand is on the
    list, rows stay under it (issue 17 §3). A pointer moving over an
    untouched list holds them too, until it leaves: a run started while the
    user aims at a row never slides another row under the click (issue 31 §5),
    while a pointer that merely sat where the window opened holds nothing.

    Args:
        table: the run table; the bar floats over its top edge, outside any
            layout, so no row moves when it appears.
        model: the run list's model (its `hold_new` and held runs).
        proxy: the sorting proxy between them.

    """

    def __init__(
        self, table: QTableView, model: RunListModel, proxy: QSortFilterProxyModel
    ) -> None:
        super().__init__(table)
        self.table = table
        self.model = model
        self.proxy = proxy
        self.model.hold_new = False
        self.hover_hold = False
        """Runs held only while the pointer rests on the untouched list."""
        self.bar = QPushButton(table)
        self.bar.setObjectName("newRunsBar")
        self.bar.setAccessibleName("Show the new runs")
        self.bar.setToolTip(
            "New runs are held here instead of pushing the rows down under the pointer"
        )
        self.bar.clicked.connect(self.show_new_runs)
        self.bar.hide()
        model.held_changed.connect(self.on_held_changed)
        model.rowsInserted.connect(self.on_rows_inserted)
        table.installEventFilter(self)
        table.viewport().installEventFilter(self)
        table.viewport().setMouseTracking(True)  # moves without a button held too
        table.verticalScrollBar().valueChanged.connect(self.on_scrolled)

    def on_held_changed(self, count: int) -> None:
        """Show (or hide) the "N new runs" bar floating over the table's top edge."""
        if count:
            self.bar.setText(
                f"▲ {count:,} new run{'s' if count != 1 else ''}: click to show"
            )
            self.place_bar()
        self.bar.setVisible(count > 0)
        self.bar.raise_()

    def place_bar(self) -> None:
        """Centre the bar under the header, over the first rows (never in the layout)."""
        bar, table = self.bar, self.table
        bar.adjustSize()
        width = min(bar.sizeHint().width() + 24, max(80, table.width() - 8))
        top = table.horizontalHeader().height() + 2
        bar.setGeometry(
            (table.width() - width) // 2, top, width, bar.sizeHint().height()
        )

    def touched(self) -> None:
        """A hand on the list: hold new runs from now on."""
        self.model.hold_new = True
        self.hover_hold = False

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Place the bar on a resize; hold on a touch, or while the pointer moves over the list."""
        if not isValid(self.table):  # the list is being torn down
            return False
        kind = event.type()
        viewport = self.table.viewport()
        if watched is self.table and kind == QEvent.Type.Resize:
            self.place_bar()
        elif kind in TOUCHES:
            self.touched()
        elif watched is viewport and kind == QEvent.Type.MouseMove:
            if not self.model.hold_new:  # a pointer moving to aim, not one resting
                self.model.hold_new = self.hover_hold = True
        elif watched is viewport and kind == QEvent.Type.Leave and self.hover_hold:
            self.model.hold_new = self.hover_hold = False
            self.model.show_held()
        return super().eventFilter(watched, event)

    def on_scrolled(self, value: int) -> None:
        """A scrolled list is a touched one."""
        if value > 0:
            self.touched()

    def show_new_runs(self) -> None:
        """Put the held new runs in the list, keep the selection, scroll to the top."""
        if self.model.show_held():
            self.table.scrollToTop()

    def on_rows_inserted(self, _parent: QModelIndex, first: int, last: int) -> None:
        """Rows went in above the viewport: keep showing the same rows."""
        bar = self.table.verticalScrollBar()
        if first == 0 and bar.value() > 0 and self.proxy.sortColumn() < 0:
            bar.setValue(bar.value() + (last - first + 1) * self.table.rowHeight(0))
