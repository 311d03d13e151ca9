"""The Stack tab: where each of a running run's workflow coroutines is suspended in the user's code."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from harvest_gui.inspect.formatting import fit_line
from harvest_gui.inspect.waiting import stack_text

if TYPE_CHECKING:
    from harvest_gui.inspect.waiting import WaitingReport


class StackView(QWidget):
    """The suspended coroutines as a Python traceback reads: task, then its frames, outermost first."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("stackView")
        self.note = QLabel()
        self.note.setObjectName("stackNote")
        self.note.setTextFormat(Qt.TextFormat.PlainText)
        self.note.setWordWrap(True)
        self.note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text = QPlainTextEdit()
        self.text.setObjectName("stackText")
        self.text.setAccessibleName("Call stack of the run's workflow coroutines")
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.note)
        layout.addWidget(self.text)
        self.report: WaitingReport | None = None

    def show_report(self, report: WaitingReport) -> None:
        """Show the stacks of `report` (or why there are none)."""
        if report == self.report:
            return
        self.report = report
        self.text.clear()
        self.text.setVisible(report.running and not report.stack_note)
        if not report.running:
            self.note.setText(
                "The run has ended: no coroutine is suspended."
                + (" Its panic is on the Summary tab." if report.panic else "")
            )
            return
        if report.stack_note:
            self.note.setText(fit_line(report.stack_note))
            return
        count = len(report.stacks)
        self.note.setText(
            f"{count} suspended coroutine{'s' if count != 1 else ''}, replayed to the "
            "run's frontier; each reads like a traceback (innermost frame last)."
            if count
            else "No coroutine is suspended: the next drive moves the run on."
        )
        self.text.setPlainText(stack_text(report.stacks))
