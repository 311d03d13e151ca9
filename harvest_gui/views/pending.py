"""The Pending tab: what a run waits on, then its unfinished tasks, timers, staged signals and mutexes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGroupBox, QLabel, QSplitter, QVBoxLayout, QWidget

from harvest_gui.inspect import formatting
from harvest_gui.inspect.waiting import WaitingReport
from harvest_gui.models.records import RecordTableModel
from harvest_gui.views.tables import fit_columns_to_titles, record_table
from harvest_gui.views.waiting import WaitingView

if TYPE_CHECKING:
    from harvest_engine import PendingTask, StagedSignal, TimerRow


def _error(task: PendingTask) -> str:
    e = task.last_error
    return f"{e.type}: {e.message}" if e is not None else ""


class PendingView(QWidget):
    """Four tables: tasks, timers, staged signals, mutexes."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("pendingView")
        self.tasks: RecordTableModel[PendingTask] = RecordTableModel(
            [
                ("Activity", lambda t: t.name),
                ("Status", lambda t: t.status),
                ("Attempt", lambda t: f"{t.attempt} of {t.max_attempts}"),
                ("Ready at", lambda t: formatting.when(t.ready_at)),
                ("Scheduled", lambda t: formatting.when(t.scheduled_at)),
                ("Last error", _error),
                ("Input", lambda t: formatting.one_line(t.input)),
            ]
        )
        self.timers: RecordTableModel[TimerRow] = RecordTableModel(
            [
                ("Timer", lambda t: t.timer_id),
                ("Fires at", lambda t: formatting.when(t.fire_at)),
            ]
        )
        self.signals: RecordTableModel[StagedSignal] = RecordTableModel(
            [
                ("Signal", lambda s: s.name),
                ("Received", lambda s: formatting.when(s.received_at)),
                ("Idempotency key", lambda s: s.idempotency_key or ""),
                ("Payload", lambda s: formatting.one_line(s.payload)),
            ]
        )
        self.mutexes: RecordTableModel[Any] = RecordTableModel(
            [
                ("Key", lambda m: str(m.key)),
                ("Held", lambda m: "held" if m.granted else "waiting"),
                ("Since", lambda m: formatting.when(m.queued_at)),
            ]
        )
        self.note = QLabel()
        self.note.setObjectName("pendingNote")
        self.note.setTextFormat(Qt.TextFormat.PlainText)
        self.note.setWordWrap(True)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setObjectName("pendingSplitter")
        self.splitter = splitter
        self.boxes: list[tuple[QGroupBox, str, RecordTableModel[Any]]] = []
        for title, model, name in (
            ("Activity tasks", self.tasks, "pendingTasks"),
            ("Unfired timers", self.timers, "pendingTimers"),
            ("Staged signals", self.signals, "pendingSignals"),
            ("Mutexes", self.mutexes, "pendingMutexes"),
        ):
            box = QGroupBox(title)
            table = record_table(name, title)
            table.setModel(model)
            fit_columns_to_titles(table)
            inner = QVBoxLayout(box)
            inner.addWidget(table)
            splitter.addWidget(box)
            self.boxes.append((box, title, model))
        self.waiting = WaitingView("pendingWaiting")
        self.open_run = self.waiting.open_run
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.waiting)
        layout.addWidget(self.note)
        layout.addWidget(splitter)

    def show_pending(
        self,
        tasks: list[PendingTask],
        timers: list[TimerRow],
        signals: list[StagedSignal],
        mutexes: list[Any],
        report: WaitingReport | None = None,
    ) -> None:
        """Fill the four tables, under what the run waits on (`report`)."""
        report = report or WaitingReport(running=False)
        self.waiting.show_report(report)
        self.waiting.setVisible(report.running)
        self.tasks.set_records(tasks)
        self.timers.set_records(timers)
        self.signals.set_records(signals)
        self.mutexes.set_records(mutexes)
        for box, title, model in self.boxes:
            box.setTitle(f"{title} ({len(model.records)})")
        if report.running and not (tasks or timers or signals or mutexes):
            # The tables are empty, but the waits above say what it is blocked on.
            self.note.setText(
                "No activity task, timer row, staged signal or mutex place in the file."
            )
        elif not (tasks or timers or signals or mutexes):
            self.note.setText(
                "Nothing is pending: no unfinished activity task, unfired timer, staged "
                "signal or mutex."
            )
        else:
            parts = [
                _count(len(tasks), "activity task"),
                _count(len(timers), "timer"),
                _count(len(signals), "staged signal"),
                _count(len(mutexes), "mutex", "mutexes"),
            ]
            self.note.setText("Pending: " + ", ".join(parts) + ".")


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"
