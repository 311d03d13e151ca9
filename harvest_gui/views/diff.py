"""DiffView: two runs' histories side by side, the first difference highlighted and scrolled to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from harvest_engine import ExecutionFilter
from harvest_gui.forms.error_text import describe_error
from harvest_gui.inspect import formatting
from harvest_gui.inspect.history_diff import (
    CHANGED,
    LEFT_ONLY,
    RIGHT_ONLY,
    SAME,
    DiffRow,
    diff_histories,
)

if TYPE_CHECKING:
    from harvest_engine import HistoryEvent
    from harvest_gui.inspect.history_diff import HistoryDiff

_COLOURS = {CHANGED: "#f6c344", LEFT_ONLY: "#e57373", RIGHT_ONLY: "#81c784"}
_MARK = {SAME: "", CHANGED: "≠", LEFT_ONLY: "-", RIGHT_ONLY: "+"}
Index = QModelIndex | QPersistentModelIndex


def _side(event: HistoryEvent | None) -> tuple[str, str, str]:
    if event is None:
        return "", "", ""
    return (
        str(event.seq),
        event.type,
        event.summary() or formatting.json_text(event.attrs, None),
    )


class DiffModel(QAbstractTableModel):
    """Rows of a `HistoryDiff`: left seq/type/detail, a mark, right seq/type/detail."""

    HEADERS = ("#", "Left event", "Left detail", "", "#", "Right event", "Right detail")

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[DiffRow] = []
        self.first: int | None = None
        self._cells: list[tuple[str, ...]] = []

    def set_diff(self, diff: HistoryDiff | None) -> None:
        """Show `diff` (None: empty)."""
        self.beginResetModel()
        self.rows = [] if diff is None else diff.rows
        self.first = None if diff is None else diff.first_difference
        self._cells = [
            (*_side(r.left), _MARK[r.kind], *_side(r.right)) for r in self.rows
        ]
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        """Aligned rows."""
        return 0 if parent.isValid() else len(self._cells)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        """Seven columns."""
        return 0 if parent.isValid() else len(self.HEADERS)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Text, the highlight of differing rows, and the changed keys as a tooltip."""
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return self._cells[index.row()][index.column()]
        if role == Qt.ItemDataRole.BackgroundRole and row.kind != SAME:
            colour = QColor(_COLOURS[row.kind])
            colour.setAlpha(255 if index.row() == self.first else 110)
            return QBrush(colour)
        if role == Qt.ItemDataRole.ToolTipRole and row.kind == CHANGED:
            return formatting.tooltip("differs in: " + ", ".join(row.keys))
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return f"{row.kind}: {' '.join(self._cells[index.row()])}"
        return None

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
        ):
            return self.HEADERS[section]
        return None


class DiffView(QWidget):
    """Pick two runs; see their histories aligned, the first difference selected."""

    def __init__(
        self, session: Any, left: str | None = None, right: str | None = None
    ) -> None:
        super().__init__()
        self.setObjectName("diffView")
        self.setWindowTitle("Diff two runs")
        self.session = session
        self.left = QComboBox()
        self.left.setObjectName("diffLeft")
        self.left.setAccessibleName("Left run")
        self.right = QComboBox()
        self.right.setObjectName("diffRight")
        self.right.setAccessibleName("Right run")
        for combo in (self.left, self.right):
            combo.setEditable(True)
            combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
            combo.setMinimumContentsLength(36)
        self.strict = QCheckBox("Compare ids and instants too")
        self.strict.setObjectName("diffStrict")
        self.compare_button = QPushButton("&Compare")
        self.compare_button.setObjectName("diffCompare")
        self.summary = QLabel()
        self.summary.setObjectName("diffSummary")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.summary.setWordWrap(True)
        self.model = DiffModel()
        self.table = QTableView()
        self.table.setObjectName("diffTable")
        self.table.setAccessibleName("Aligned histories")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        for col, width in enumerate((50, 170, 240, 24, 50, 170)):
            self.table.setColumnWidth(col, width)
        form = QFormLayout()
        form.addRow("&Left run", self.left)
        form.addRow("&Right run", self.right)
        buttons = QHBoxLayout()
        buttons.addWidget(self.strict)
        buttons.addStretch(1)
        buttons.addWidget(self.compare_button)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.summary)
        layout.addWidget(self.table)
        self.compare_button.clicked.connect(self.compare)
        self.strict.toggled.connect(lambda _s: self.compare())
        self.diff: HistoryDiff | None = None
        self._fill(left, right)
        self.resize(1100, 640)
        if left and right:
            self.compare()

    def _fill(self, left: str | None, right: str | None) -> None:
        """Offer runs of the left run's workflow (newest first) in both boxes."""
        name = None
        if left:
            try:
                name = self.session.describe(left).workflow_name
            except Exception:  # a purged run: the ids can still be typed in
                name = None
        flt = ExecutionFilter().limit(200)
        if name:
            flt = flt.workflow_name(name)
        runs = self.session.list_executions(flt).executions
        for combo in (self.left, self.right):
            for run in runs:
                # Named as the user knows the run: its workflow id and workflow first.
                combo.addItem(
                    f"{run.workflow_id} · {run.workflow_name} ({run.exec_id})",
                    str(run.exec_id),
                )
                combo.setItemData(
                    combo.count() - 1,
                    formatting.tooltip(
                        f"{run.workflow_id} · {run.workflow_name} · {run.state}\n"
                        f"exec {run.exec_id}"
                    ),
                    Qt.ItemDataRole.ToolTipRole,
                )
        ids = [str(r.exec_id) for r in runs]
        self._pick(self.left, left or (ids[0] if ids else ""))
        self._pick(self.right, right or next((i for i in ids if i != left), ""))

    @staticmethod
    def _pick(combo: QComboBox, exec_id: str) -> None:
        index = combo.findData(exec_id)
        if index >= 0:
            combo.setCurrentIndex(index)
        else:  # not among the listed runs: shown as typed
            combo.setEditText(exec_id)

    @staticmethod
    def picked(combo: QComboBox) -> str:
        """The exec id a picker names: a listed run's, or the id typed into it."""
        text = combo.currentText().strip()
        index = combo.findText(text)
        return str(combo.itemData(index)) if index >= 0 else text

    def compare(self) -> None:
        """Load both histories and align them."""
        left, right = self.picked(self.left), self.picked(self.right)
        try:
            a = self.session.load_history(left)
            b = self.session.load_history(right)
        except Exception as exc:  # ExecutionNotFound and friends, in words
            self.model.set_diff(None)
            self.summary.setText(describe_error(exc))
            return
        self.diff = diff_histories(a, b, strict=self.strict.isChecked())
        self.model.set_diff(self.diff)
        self.summary.setText(self.diff.summary())
        if self.diff.first_difference is not None:
            self.table.selectRow(self.diff.first_difference)
            self.table.scrollTo(self.model.index(self.diff.first_difference, 0))
