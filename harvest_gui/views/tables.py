"""Shared setup for the inspector's read-only record tables."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView


def record_table(object_name: str, accessible_name: str) -> QTableView:
    """A row-selecting, read-only table with fixed row heights."""
    table = QTableView()
    table.setObjectName(object_name)
    table.setAccessibleName(accessible_name)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setAlternatingRowColors(True)
    table.verticalHeader().hide()
    table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 6)
    table.horizontalHeader().setStretchLastSection(True)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    return table


def fit_columns_to_titles(table: QTableView, padding: int = 28) -> None:
    """Widen each column that is narrower than its own header title (never narrows one)."""
    model = table.model()
    header = table.horizontalHeader()
    metrics = header.fontMetrics()
    for col in range(model.columnCount()):
        title = str(model.headerData(col, Qt.Orientation.Horizontal) or "")
        wanted = metrics.horizontalAdvance(title) + padding
        if header.sectionSize(col) < wanted:
            header.resizeSection(col, wanted)
