"""RecordTableModel: a read-only table over a list of records with declared columns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from harvest_gui.inspect import formatting

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

R = TypeVar("R")
AnyIndex = QModelIndex | QPersistentModelIndex
SEQ_ROLE = Qt.ItemDataRole.UserRole + 3
"""Role giving a row's record (for views that act on a selection)."""


class RecordTableModel(QAbstractTableModel, Generic[R]):
    """Rows are records; each column is a title and a function giving the cell's text.

    Args:
        columns: ``(title, text_of_record)`` pairs.

    """

    def __init__(self, columns: Sequence[tuple[str, Callable[[R], str]]]) -> None:
        super().__init__()
        self.columns = list(columns)
        self.records: list[R] = []
        self._cells: list[list[str]] = []

    def set_records(self, records: Sequence[R]) -> None:
        """Replace every row (cheap for the small tables this serves)."""
        records = list(records)
        cells = [[fn(r) for _, fn in self.columns] for r in records]
        if cells == self._cells:
            self.records = records
            return
        self.beginResetModel()
        self.records = records
        self._cells = cells
        self.endResetModel()

    def append_records(self, records: Sequence[R]) -> None:
        """Add rows at the end (append-only logs keep selection and scroll)."""
        if not records:
            return
        first = len(self.records)
        self.beginInsertRows(QModelIndex(), first, first + len(records) - 1)
        self.records.extend(records)
        self._cells.extend([fn(r) for _, fn in self.columns] for r in records)
        self.endInsertRows()

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        """One row per record."""
        return 0 if parent.isValid() else len(self.records)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        """One column per declared column."""
        return 0 if parent.isValid() else len(self.columns)

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
            and 0 <= section < len(self.columns)
        ):
            return self.columns[section][0]
        return None

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Cell text (display and tooltip) and the row's record."""
        if not index.isValid() or not 0 <= index.row() < len(self.records):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self._cells[index.row()][index.column()]
        if role == Qt.ItemDataRole.ToolTipRole:
            return formatting.tooltip(self._cells[index.row()][index.column()])
        if role == SEQ_ROLE:
            return self.records[index.row()]
        return None
