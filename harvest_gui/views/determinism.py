"""DeterminismView: replay the selected run against the loaded code; clean, or both sides of the split."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QGridLayout, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from harvest_gui.forms.commands import NO_CODE_REASON, runtime_of
from harvest_gui.forms.error_text import describe_error
from harvest_gui.forms.run_form import read_target
from harvest_gui.inspect.formatting import json_text, middle
from harvest_gui.inspect.replay_check import ReplayVerdict, check_determinism
from harvest_gui.theme import error_style, ok_style


def _box(name: str) -> QPlainTextEdit:
    box = QPlainTextEdit()
    box.setObjectName(name)
    box.setReadOnly(True)
    box.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    return box


class DeterminismView(QWidget):
    """The verdict of `WorkflowReplayer` on one run's history."""

    def __init__(self, session: Any, exec_id: str) -> None:
        super().__init__()
        self.setObjectName("determinismView")
        name = middle(read_target(session, exec_id).name)
        self.setWindowTitle(f"Determinism check — {name}")  # as the user knows the run
        self.session = session
        self.exec_id = exec_id
        self.verdict_label = QLabel()
        self.verdict_label.setObjectName("verdictLabel")
        self.verdict_label.setTextFormat(Qt.TextFormat.PlainText)
        self.verdict_label.setWordWrap(True)
        font = self.verdict_label.font()
        font.setBold(True)
        self.verdict_label.setFont(font)
        self.recorded = _box("recordedBox")
        self.expected = _box("expectedBox")
        self.event_json = _box("divergentEvent")
        grid = QGridLayout()
        grid.addWidget(QLabel("Recorded in the history"), 0, 0)
        grid.addWidget(QLabel("What the loaded code does"), 0, 1)
        grid.addWidget(self.recorded, 1, 0)
        grid.addWidget(self.expected, 1, 1)
        self.sides = QWidget()
        self.sides.setLayout(grid)
        layout = QVBoxLayout(self)
        layout.addWidget(self.verdict_label)
        layout.addWidget(self.sides)
        self.event_box = QWidget()
        event_layout = QVBoxLayout(self.event_box)
        event_layout.setContentsMargins(0, 0, 0, 0)
        event_layout.addWidget(
            QLabel("The recorded event where the code parts from the history")
        )
        event_layout.addWidget(self.event_json)
        layout.addWidget(self.event_box)
        layout.addStretch(1)
        self.verdict: ReplayVerdict | None = None
        self.resize(900, 480)
        self.run_check()

    def run_check(self) -> ReplayVerdict | None:
        """Replay now and show the verdict."""
        rt = runtime_of(self.session)
        if rt is None or not rt.registry.workflows:
            self.verdict_label.setText(
                "Cannot check: the workflow code is not loaded in this window. "
                + NO_CODE_REASON
            )
            self.sides.hide()
            self.event_box.hide()
            return None
        try:
            history = self.session.load_history(self.exec_id)
        except Exception as exc:  # a purged run, in words
            self.verdict_label.setText(describe_error(exc))
            return None
        self.verdict = check_determinism(rt.registry.workflows.values(), history)
        self.verdict_label.setText(self.verdict.text)
        self.verdict_label.setStyleSheet(
            ok_style() if self.verdict.clean else error_style()
        )
        self.sides.setVisible(not self.verdict.clean and bool(self.verdict.recorded))
        self.recorded.setPlainText(self.verdict.recorded)
        self.expected.setPlainText(self.verdict.expected)
        event = self.verdict.event
        self.event_box.setVisible(event is not None)
        self.event_json.setPlainText(
            "" if event is None else json_text(event.to_dict())
        )
        return self.verdict
