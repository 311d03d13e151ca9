"""TimeTravelView: a slider over a run's history; summary, pending items, results and query answers as of that event."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSlider,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from harvest_gui.forms.commands import handler_names, runtime_of
from harvest_gui.forms.error_text import describe_error
from harvest_gui.forms.payload_input import parse_json
from harvest_gui.forms.run_form import read_target
from harvest_gui.inspect import formatting
from harvest_gui.inspect.history_as_of import RunAsOf, query_as_of, state_as_of
from harvest_gui.inspect.reset_points import point_text

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine import HistoryEvent

NO_CODE_TEXT = (
    "Read-only without code: query results as of an event come from replaying the "
    "workflow's code, and this window has none. Open the file as its writer with the app "
    "(harvest-gui PATH --app MODULE) to ask queries here."
)


def _text(name: str) -> QPlainTextEdit:
    box = QPlainTextEdit()
    box.setObjectName(name)
    box.setReadOnly(True)
    box.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    return box


def _table(name: str, headers: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setObjectName(name)
    table.setHorizontalHeaderLabels(headers)
    table.horizontalHeader().setStretchLastSection(True)
    table.verticalHeader().hide()
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    return table


def _fill(table: QTableWidget, rows: list[tuple[str, ...]]) -> None:
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.setItem(r, c, QTableWidgetItem(value))


class TimeTravelView(QWidget):
    """Drag the slider (or use the arrow keys) to replay the run to any event.

    "Reset to this event…" asks for a reset of the run at the slider's
    event (the window opens the reset form there); it is offered only at an
    event a reset may start from, and the line beside it says why not.

    Signals:
        reset_requested(int): the event seq to reset the run to.
    """

    reset_requested = Signal(int)

    def __init__(self, session: Any, exec_id: str) -> None:
        super().__init__()
        self.setObjectName("timeTravelView")
        # Named as the user knows the run (issue 31 §8), not by its exec id.
        name = formatting.middle(read_target(session, exec_id).name)
        self.setWindowTitle(f"Time travel — {name}")
        self.session = session
        self.exec_id = exec_id
        self.history: list[HistoryEvent] = []
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setObjectName("timeSlider")
        self.slider.setAccessibleName("Event in the history")
        self.slider.setMinimum(1)
        self.slider.setPageStep(10)
        self.prev_button = QPushButton("◀ &Previous")
        self.prev_button.setObjectName("prevEvent")
        self.next_button = QPushButton("&Next ▶")
        self.next_button.setObjectName("nextEvent")
        self.position = QLabel()
        self.position.setObjectName("timePosition")
        self.position.setTextFormat(Qt.TextFormat.PlainText)
        self.state = QLabel()
        self.state.setObjectName("timeState")
        self.state.setTextFormat(Qt.TextFormat.PlainText)
        self.reset_note = QLabel()
        self.reset_note.setObjectName("timeResetNote")
        self.reset_note.setTextFormat(Qt.TextFormat.PlainText)
        self.reset_note.setWordWrap(True)
        self.reset_button = QPushButton("&Reset to this event…")
        self.reset_button.setObjectName("timeResetButton")
        self.reset_button.setAccessibleName("Reset the run to this event")
        self.reset_button.clicked.connect(self.ask_reset)
        self.input = _text("timeInput")
        self.outcome = _text("timeOutcome")
        self.attributes = _text("timeAttributes")
        self.pending = _table("timePending", ["Kind", "Name", "Since event", "Detail"])
        self.results = _table("timeResults", ["Event", "What", "Value"])
        self.pending.setColumnWidth(0, 70)
        self.pending.setColumnWidth(1, 140)
        self.results.setColumnWidth(0, 60)
        self.results.setColumnWidth(1, 220)
        summary = QWidget()
        form = QFormLayout(summary)
        form.addRow("State", self.state)
        form.addRow("Input", self.input)
        form.addRow("Output / error", self.outcome)
        form.addRow("Search attributes", self.attributes)
        right = QSplitter(Qt.Orientation.Vertical)
        pending_box = QWidget()
        pending_layout = QVBoxLayout(pending_box)
        pending_layout.addWidget(QLabel("Pending at this event"))
        pending_layout.addWidget(self.pending)
        results_box = QWidget()
        results_layout = QVBoxLayout(results_box)
        results_layout.addWidget(QLabel("Results and signals so far"))
        results_layout.addWidget(self.results)
        results_layout.addWidget(self._query_panel())
        right.addWidget(pending_box)
        right.addWidget(results_box)
        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(summary)
        body.addWidget(right)
        body.setSizes([420, 520])
        nav = QHBoxLayout()
        nav.addWidget(self.prev_button)
        nav.addWidget(self.slider, 1)
        nav.addWidget(self.next_button)
        reset_row = QHBoxLayout()
        reset_row.addWidget(self.reset_note, 1)
        reset_row.addWidget(self.reset_button)
        layout = QVBoxLayout(self)
        layout.addLayout(nav)
        layout.addWidget(self.position)
        layout.addLayout(reset_row)
        layout.addWidget(body, 1)
        self.slider.valueChanged.connect(self.show_seq)
        self.prev_button.clicked.connect(
            lambda: self.slider.setValue(self.slider.value() - 1)
        )
        self.next_button.clicked.connect(
            lambda: self.slider.setValue(self.slider.value() + 1)
        )
        self.current: RunAsOf | None = None
        self.resize(1000, 680)
        self.reload()
        self._offer_queries()
        # The keyboard on the slider (found under Xvfb: the arrow keys did nothing,
        # the first button had it), so ← and → step through the events at once.
        self.slider.setFocus(Qt.FocusReason.OtherFocusReason)

    # -- queries as of the event -------------------------------------------------------

    def _query_panel(self) -> QWidget:
        self.query_name = QComboBox()
        self.query_name.setObjectName("timeQueryName")
        self.query_name.setAccessibleName("Query name")
        self.query_name.setEditable(True)
        self.query_arg = QLineEdit()
        self.query_arg.setObjectName("timeQueryArg")
        self.query_arg.setAccessibleName("Query argument (JSON)")
        self.query_arg.setPlaceholderText("argument as JSON (blank: none)")
        self.query_button = QPushButton("&Ask as of this event")
        self.query_button.setObjectName("timeQueryAsk")
        self.query_button.clicked.connect(self.ask_query)
        self.query_notice = QLabel()
        self.query_notice.setObjectName("timeQueryNotice")
        self.query_notice.setTextFormat(Qt.TextFormat.PlainText)
        self.query_notice.setWordWrap(True)
        self.query_notice.hide()
        self.query_result = _text("timeQueryResult")
        self.query_result.setMaximumHeight(90)
        self.query_error: str | None = None
        self._asked = False
        box = QWidget()
        layout = QVBoxLayout(box)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(
            QLabel("Query as of this event (replays the history up to it)")
        )
        row = QHBoxLayout()
        row.addWidget(self.query_name, 1)
        row.addWidget(self.query_arg, 1)
        row.addWidget(self.query_button)
        layout.addLayout(row)
        layout.addWidget(self.query_notice)
        layout.addWidget(self.query_result)
        return box

    def workflow_name(self) -> str:
        """The run's workflow, from its first event."""
        return (
            str(self.history[0].attrs.get("workflow_name", "")) if self.history else ""
        )

    def workflow_code(self) -> list[Callable[..., Any]] | None:
        """The registered workflow and `@query` functions the replay needs, or None (the panel says why)."""
        rt = runtime_of(self.session)
        if rt is None:
            return None
        if self.workflow_name() not in rt.registry.workflows:
            return None
        workflows = [info.fn for info in rt.registry.workflows.values()]
        return workflows + [handler.fn for handler in rt.registry.queries.values()]

    def _offer_queries(self) -> None:
        rt = runtime_of(self.session)
        name = self.workflow_name()
        if rt is None:
            reason = NO_CODE_TEXT
        elif name not in rt.registry.workflows:
            reason = (
                f"The workflow {name!r} is not registered in this window, so its queries "
                "cannot be replayed (start the window with --app MODULE)."
            )
        else:
            reason = ""
            self.query_name.addItems(handler_names(self.session, name, "query"))
        for widget in (
            self.query_name,
            self.query_arg,
            self.query_button,
            self.query_result,
        ):
            widget.setEnabled(not reason)
        self.query_notice.setText(reason)
        self.query_notice.setVisible(bool(reason))

    def ask_query(self) -> None:
        """Answer the chosen query as of the slider's event; it follows the slider from now on."""
        self._asked = True
        self._answer()

    def _answer(self) -> None:
        code = self.workflow_code()
        name = self.query_name.currentText().strip()
        if code is None or not name or self.current is None:
            return
        arg = parse_json(self.query_arg.text())
        if not arg.ok:
            self._show_answer(None, f"The argument is {arg.error}")
            return
        try:
            value = query_as_of(code, self.history, self.current.seq, name, arg.value)
        except Exception as exc:  # the handler's own error too, in words
            self._show_answer(None, describe_error(exc))
            return
        self._show_answer(value, None)

    def _show_answer(self, value: Any, error: str | None) -> None:
        self.query_error = error
        seq = self.current.seq if self.current is not None else 0
        if error is None:
            text = f"{self.query_name.currentText()} at event {seq}: {formatting.json_text(value)}"
        else:
            text = f"At event {seq}: {error}"
        self.query_result.setPlainText(text)

    def reload(self) -> None:
        """Re-read the history (the slider stays where it was, or goes to the end)."""
        try:
            self.history = self.session.load_history(self.exec_id)
        except Exception as exc:  # a purged run, in words
            self.position.setText(describe_error(exc))
            self.slider.setEnabled(False)
            self.reset_button.setEnabled(False)
            return
        last = self.history[-1].seq if self.history else 1
        at_end = self.slider.value() >= self.slider.maximum()
        self.slider.setMaximum(last)
        if at_end or self.current is None:
            self.slider.setValue(last)
        self.show_seq(self.slider.value())

    def ask_reset(self) -> None:
        """Ask the window for the reset form at the slider's event."""
        if self.current is not None:
            self.reset_requested.emit(self.current.seq)

    def show_seq(self, seq: int) -> None:
        """Show the run as it stood after event `seq`."""
        s = state_as_of(self.history, seq)
        self.current = s
        self.position.setText(
            f"Event {s.seq} of {s.total_events}: {s.event_type} at {formatting.when_precise(s.at)}"
        )
        self.state.setText(s.state)
        self.input.setPlainText(formatting.json_text(s.input))
        if s.state == "RUNNING":
            self.outcome.setPlainText("(still running at this event)")
        else:
            value = s.output if s.error is None else {"error": s.error}
            self.outcome.setPlainText(formatting.json_text(value))
        self.attributes.setPlainText(formatting.json_text(s.search_attributes))
        _fill(
            self.pending,
            [(p.kind, p.name, str(p.since_seq), p.detail) for p in s.pending],
        )
        rows = [
            (str(q), what, formatting.json_text(v, None)) for q, what, v in s.results
        ]
        rows += [
            (str(q), f"signal {n}", formatting.json_text(v, None))
            for q, n, v in s.signals
        ]
        _fill(self.results, sorted(rows, key=lambda r: int(r[0])))
        ok, note = point_text(self.history, s.seq)
        self.reset_note.setText(note)
        self.reset_button.setEnabled(ok)
        self.reset_button.setToolTip("" if ok else note)
        self.prev_button.setEnabled(seq > 1)
        self.next_button.setEnabled(seq < self.slider.maximum())
        if self._asked:
            self._answer()
