"""The Stack tab: where each of a running run's workflow coroutines is suspended in the user's code."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

if TYPE_CHECKING:
    from harvest_gui.waiting import WaitingReport

COLUMNS = ("Task / function", "File:line", "Source line")


class StackView(QWidget):
    """A tree: one item per suspended task (what it awaits), its frames outermost first."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("stackView")
        self.note = QLabel()
        self.note.setObjectName("stackNote")
        self.note.setTextFormat(Qt.TextFormat.PlainText)
        self.note.setWordWrap(True)
        self.note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.tree = QTreeWidget()
        self.tree.setObjectName("stackTree")
        self.tree.setAccessibleName("Call stack of the run's workflow coroutines")
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        header = self.tree.header()
        metrics = header.fontMetrics()
        header.resizeSection(0, metrics.horizontalAdvance("x" * 34))
        header.resizeSection(1, metrics.horizontalAdvance("x" * 30))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.note)
        layout.addWidget(self.tree)
        self.report: WaitingReport | None = None

    def show_report(self, report: WaitingReport) -> None:
        """Show the stacks of `report` (or why there are none)."""
        if report == self.report:
            return
        self.report = report
        self.tree.clear()
        if not report.running:
            self.note.setText(
                "The run has ended: no coroutine is suspended."
                + (" Its panic is on the Summary tab." if report.panic else "")
            )
            return
        if report.stack_note:
            self.note.setText(report.stack_note)
            return
        count = len(report.stacks)
        self.note.setText(
            f"{count} suspended coroutine{'s' if count != 1 else ''}, replayed to the "
            "run's frontier (innermost frame last)."
            if count
            else "No coroutine is suspended: the next drive moves the run on."
        )
        for stack in report.stacks:
            task = QTreeWidgetItem([stack.task, "", f"awaiting {stack.awaiting}"])
            font = task.font(0)
            font.setBold(True)
            task.setFont(0, font)
            for frame in stack.frames:
                item = QTreeWidgetItem(
                    [frame.function, f"{frame.file}:{frame.line}", frame.source]
                )
                item.setToolTip(1, frame.file)
                item.setToolTip(2, frame.source)
                task.addChild(item)
            self.tree.addTopLevelItem(task)
        self.tree.expandAll()

    def rows(self) -> list[list[str]]:
        """Every item's texts, tasks and frames in display order (for tests)."""
        out: list[list[str]] = []
        for i in range(self.tree.topLevelItemCount()):
            task = self.tree.topLevelItem(i)
            if task is None:
                continue
            out.append([task.text(c) for c in range(len(COLUMNS))])
            for j in range(task.childCount()):
                child = task.child(j)
                if child is not None:
                    out.append([child.text(c) for c in range(len(COLUMNS))])
        return out
