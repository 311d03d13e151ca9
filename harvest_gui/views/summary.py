"""The Summary tab: a run's facts, payloads as JSON, and links to related runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from harvest_gui.inspect import formatting
from harvest_gui.theme import state_colour
from harvest_gui.views.elided import ElidedLabel
from harvest_gui.views.payload import PayloadView
from harvest_gui.views.waiting import WaitingView

if TYPE_CHECKING:
    from harvest_engine import ExecutionDetail, HistoryEvent, Stored
    from harvest_gui.inspect.waiting import WaitingReport

FIELDS = (
    ("exec_id", "Exec ID"),
    ("workflow_name", "Workflow"),
    ("workflow_id", "Workflow ID"),
    ("state", "State"),
    ("started", "Started"),
    ("closed", "Closed"),
    ("duration", "Duration"),
    ("attempt", "Attempt"),
    ("cancel", "Cancel requested"),
    ("deadline", "Deadline"),
)
# The run's own words (StartOptions' summary and details, ctx.set_current_details):
# rows shown only for a run that has them.
PROGRESS_FIELDS = (
    ("summary", "Summary"),
    ("details", "Details"),
    ("current_details", "Doing now"),
)


def failure_parts(stored: Stored) -> tuple[str, str | None]:
    """A stored run error as (reason, traceback or None): ``"Type: message"`` first.

    The traceback is the error's ``stack_trace`` when the engine recorded one.
    """
    if stored.is_null:
        return "", None
    if stored.is_unreadable:
        return formatting.stored_text(stored), None
    value = stored.value
    if not isinstance(value, dict):
        return formatting.middle(str(value), 2000), None
    kind, message = value.get("type"), value.get("message")
    reason = f"{kind}: {message}" if kind and message else str(message or kind or "")
    trace = value.get("stack_trace")
    return formatting.middle(reason, 2000), trace if isinstance(
        trace, str
    ) and trace else None


def _state_text(d: ExecutionDetail) -> str:
    """The state, and for a paused run (`rt.pause`) that it is held and why."""
    if not d.paused:
        return d.state
    why = f": {formatting.middle(d.pause_reason, 200)}" if d.pause_reason else ""
    return f"{d.state} · paused{why}"


def plain_label(object_name: str) -> QLabel:
    """A selectable label that never interprets its text as rich text."""
    label = QLabel()
    label.setObjectName(object_name)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def absent_text(field: str, state: str) -> str:
    """What an empty payload box says: why there is no value."""
    if field == "output":
        return (
            "No output yet: the run is still running."
            if state == "RUNNING"
            else "No output."
        )
    if field == "error":
        return (
            "No error."
            if state != "RUNNING"
            else "No error (the run is still running)."
        )
    names = {"input": "input", "memo": "memo", "search_attributes": "search attributes"}
    return f"No {names.get(field, field)}."


class SummaryView(QWidget):
    """Facts, payloads (input, output, error, memo, search attributes) and links.

    Signals:
        open_run(str): the user followed a link to another run.
    """

    open_run = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("summaryView")
        self.labels: dict[str, QLabel] = {}
        form = QFormLayout()
        for key, title in FIELDS:
            # Elided: a long id neither widens the window nor puts a megabyte in a label.
            label = ElidedLabel(f"summary_{key}", Qt.TextElideMode.ElideMiddle)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setAccessibleName(title)
            self.labels[key] = label
            form.addRow(title + ":", label)
        self._form = form
        for key, title in PROGRESS_FIELDS:
            label = ElidedLabel(f"summary_{key}", Qt.TextElideMode.ElideMiddle)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setAccessibleName(title)
            self.labels[key] = label
            form.addRow(title + ":", label)
            form.setRowVisible(label, False)
        # One link a line: side by side, two run ids made the pane scroll sideways
        # at 1024 px (issue 31 §12).
        self.links = QVBoxLayout()
        self.links.setContentsMargins(0, 0, 0, 0)
        self.links.setObjectName("summaryLinks")
        self.link_buttons: list[QPushButton] = []
        self._links: list[tuple[str, str]] = []
        self._state = ""
        links_box = QWidget()
        links_box.setLayout(self.links)
        form.addRow("Related runs:", links_box)
        self.payloads = {
            "input": PayloadView("Input", "payloadInput"),
            "output": PayloadView("Output", "payloadOutput"),
            "error": PayloadView("Error", "payloadError"),
            "memo": PayloadView("Memo", "payloadMemo"),
            "search_attributes": PayloadView("Search attributes", "payloadSearch"),
        }
        self.waiting = WaitingView("summaryWaiting")
        self.waiting.open_run.connect(self.open_run)
        self._build_failure()
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.addWidget(self.failure)
        layout.addLayout(form)
        layout.addWidget(self.waiting)
        for view in self.payloads.values():
            view.text.setMinimumHeight(70)
            layout.addWidget(view)
        layout.addStretch(1)  # folded payloads stay at the top, not spread out
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(body)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)

    def _build_failure(self) -> None:
        """The box at the top that says why a run failed (and where, with a traceback)."""
        self.failure = QFrame()
        self.failure.setObjectName("summaryFailure")
        self.failure.setFrameShape(QFrame.Shape.StyledPanel)
        self.failure_reason = plain_label("summaryFailureReason")
        self.failure_reason.setWordWrap(True)
        self.failure_reason.setAccessibleName("Why the run failed")
        self.failure_trace = QPlainTextEdit()
        self.failure_trace.setObjectName("summaryFailureTrace")
        self.failure_trace.setReadOnly(True)
        self.failure_trace.setAccessibleName("Traceback")
        self.failure_trace.setFont(
            QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        )
        self.failure_trace.setMaximumHeight(160)
        self.failure_trace.hide()
        box = QVBoxLayout(self.failure)
        box.addWidget(self.failure_reason)
        box.addWidget(self.failure_trace)
        self.failure.hide()

    def _show_failure(self, d: ExecutionDetail) -> None:
        reason, trace = failure_parts(d.error)
        if not reason:
            self.failure.hide()
            return
        self.failure_reason.setText(f"{d.state}: {reason}")
        self.failure_trace.setPlainText(trace or "")
        self.failure_trace.setVisible(trace is not None)
        self.failure.show()

    def show_run(self, d: ExecutionDetail, history: list[HistoryEvent]) -> None:
        """Fill every field from a described run and its history (for child links)."""
        duration = (
            (d.closed_at - d.started_at).total_seconds()
            if d.closed_at and d.started_at
            else None
        )
        values = {
            "exec_id": str(d.exec_id),
            "workflow_name": d.workflow_name,
            "workflow_id": d.workflow_id,
            "state": _state_text(d),
            "started": formatting.when(d.started_at),
            "closed": formatting.when(d.closed_at)
            or (
                "not yet: waiting its turn"
                if d.state == "ENQUEUED"
                else "still running"
            ),
            "duration": formatting.duration(duration),
            "attempt": str(d.attempt),
            "cancel": d.cancel_requested or "no",
            "deadline": formatting.when(d.deadline) or "none",
        }
        for key, text in values.items():
            self.labels[key].setText(text)
        for key, _ in PROGRESS_FIELDS:
            said: str | None = getattr(d, key)
            label = self.labels[key]
            label.setText(formatting.middle(said or "", 2000))
            self._form.setRowVisible(label, bool(said))
        self._state = d.state
        self._show_failure(d)
        self.restyle()
        for key, view in self.payloads.items():
            stored = getattr(d, key)
            if stored.is_null:
                view.set_absent(absent_text(key, d.state))
            else:
                view.set_text(formatting.stored_text(stored))
        links: list[tuple[str, str]] = []
        if d.parent_exec_id is not None:
            links.append(("Parent", str(d.parent_exec_id)))
        if d.predecessor is not None:
            links.append(("Predecessor", str(d.predecessor)))
        if d.successor is not None:
            links.append(("Successor", str(d.successor)))
        for event in history:
            child = (
                event.attrs.get("child")
                if event.type == "ChildWorkflowStarted"
                else None
            )
            if child:
                links.append(("Child", str(child)))
        self._set_links(links)

    def show_waiting(self, report: WaitingReport) -> None:
        """Say what the run is blocked on (or, for a panicked run, its traceback)."""
        self.waiting.show_report(report)
        self.waiting.setVisible(report.running or bool(report.panic))

    def restyle(self) -> None:
        """Colour the state in the current theme."""
        colour = state_colour(self._state).name()
        self.labels["state"].setStyleSheet(f"color: {colour}; font-weight: bold;")
        failed = state_colour("FAILED").name()
        self.failure_reason.setStyleSheet(f"color: {failed}; font-weight: bold;")

    def _set_links(self, links: list[tuple[str, str]]) -> None:
        if links == self._links and self.link_buttons:
            return
        self._links = links
        while self.links.count():
            item = self.links.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        self.link_buttons = []
        for role, exec_id in links:
            button = QPushButton(f"{role}: {exec_id}")
            button.setObjectName(f"link{role}")
            button.setAccessibleName(f"Open {role.lower()} run {exec_id}")
            button.clicked.connect(lambda _=False, e=exec_id: self.open_run.emit(e))
            self.links.addWidget(button, 0, Qt.AlignmentFlag.AlignLeft)
            self.link_buttons.append(button)
        if not links:
            none = plain_label("summaryNoLinks")
            none.setText("none (no parent, children, predecessor or successor)")
            none.setWordWrap(True)
            self.links.addWidget(none)
