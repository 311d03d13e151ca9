"""The Schedules page: every stored schedule, its spec, next fire time and state; fire one, see its runs."""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from harvest_gui.async_bridge import track
from harvest_gui.forms.backfill import BackfillDialog
from harvest_gui.forms.commands import schedule_firing_reason, trigger_schedule
from harvest_gui.forms.error_text import describe_error
from harvest_gui.inspect import formatting
from harvest_gui.inspect.schedule_runs import recent_runs
from harvest_gui.models.records import SEQ_ROLE, RecordTableModel
from harvest_gui.views.tables import fit_columns_to_titles, record_table

if TYPE_CHECKING:
    from harvest_engine import ExecutionSummary, ScheduleRow
    from harvest_gui.session import Session


def _spec(row: ScheduleRow) -> str:
    return row.schedule.describe() if row.schedule is not None else "(damaged spec)"


def _took(r: ExecutionSummary) -> str:
    if r.started_at is None or r.closed_at is None:
        return ""
    return formatting.duration((r.closed_at - r.started_at).total_seconds())


class SchedulesView(QWidget):
    """The schedules; for the selected one, Trigger now, Backfill… and its recent runs.

    Signals:
        open_run(str): a recent run was double-clicked (show it on the Runs page).
    """

    open_run = Signal(str)

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.setObjectName("schedulesView")
        self.session = session
        self.backfill_dialog: BackfillDialog | None = None
        self._trigger_task: asyncio.Task[None] | None = None
        self.model: RecordTableModel[ScheduleRow] = RecordTableModel(
            [
                ("Workflow", lambda r: r.workflow_name),
                ("Spec", _spec),
                (
                    "Next fire",
                    lambda r: formatting.when(r.next_fire_at) if not r.paused else "",
                ),
                ("State", lambda r: "paused" if r.paused else "active"),
                ("Overlap", lambda r: str(r.overlap)),
                ("Max active runs", lambda r: str(r.max_active_runs)),
                ("Last fired", lambda r: formatting.when(r.last_fired_at) or "never"),
                ("Input", lambda r: formatting.one_line(r.input)),
                ("Problem", lambda r: r.problem or ""),
            ]
        )
        self.table = record_table("schedulesTable", "Schedules")
        self.table.setModel(self.model)
        fit_columns_to_titles(self.table)
        for col, width in enumerate((160, 200, 150, 70, 80, 110, 150)):
            self.table.setColumnWidth(col, width)
        self.note = QLabel()
        self.note.setObjectName("schedulesNote")
        self.note.setTextFormat(Qt.TextFormat.PlainText)
        self.trigger_button = QPushButton("&Trigger now")
        self.trigger_button.setObjectName("triggerSchedule")
        self.trigger_button.setToolTip("Start one run of the selected schedule now")
        self.backfill_button = QPushButton("&Backfill…")
        self.backfill_button.setObjectName("backfillSchedule")
        self.backfill_button.setToolTip(
            "Start the selected schedule's runs for the slots of a past range"
        )
        for button in (self.trigger_button, self.backfill_button):
            button.setAutoDefault(False)
        self.action_note = QLabel()
        self.action_note.setObjectName("scheduleActionNote")
        self.action_note.setTextFormat(Qt.TextFormat.PlainText)
        self.action_note.setWordWrap(True)
        self.trigger_button.clicked.connect(self.on_trigger)
        self.backfill_button.clicked.connect(self.on_backfill)
        actions = QHBoxLayout()
        actions.addWidget(self.trigger_button)
        actions.addWidget(self.backfill_button)
        actions.addWidget(self.action_note, 1)
        self.runs_caption = QLabel()
        self.runs_caption.setObjectName("scheduleRunsCaption")
        self.runs_caption.setTextFormat(Qt.TextFormat.PlainText)
        self.runs_model: RecordTableModel[ExecutionSummary] = RecordTableModel(
            [
                ("Workflow id", lambda r: r.workflow_id),
                ("State", lambda r: r.state),
                ("Started", lambda r: formatting.when(r.started_at)),
                ("Took", _took),
            ]
        )
        self.runs_table = record_table("scheduleRuns", "The schedule's recent runs")
        self.runs_table.setModel(self.runs_model)
        self.runs_table.setColumnWidth(0, 400)
        self.runs_table.setColumnWidth(1, 110)
        self.runs_table.setColumnWidth(2, 150)
        self.runs_table.doubleClicked.connect(self.on_run_activated)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.table)
        top_layout.addWidget(self.note)
        bottom = QWidget()
        bottom_layout = QVBoxLayout(bottom)
        bottom_layout.setContentsMargins(0, 0, 0, 0)
        bottom_layout.addLayout(actions)
        bottom_layout.addWidget(self.runs_caption)
        bottom_layout.addWidget(self.runs_table, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.setObjectName("schedulesSplit")
        split.addWidget(top)
        split.addWidget(bottom)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)  # the runs below get the larger share
        layout = QVBoxLayout(self)
        layout.addWidget(split)
        self.table.selectionModel().currentRowChanged.connect(
            lambda _c, _p: self.show_selected()
        )
        self.refresh()

    def refresh(self) -> None:
        """Re-read the schedules."""
        rows = self.session.list_schedules()
        kept = self.selected
        self.model.set_records(rows)
        if kept is not None and self.selected != kept:  # a reset lost the selection
            self.select_schedule(kept.workflow_name)
        self.note.setText(
            f"{formatting.count(len(rows), 'schedule')}."
            if rows
            else "No schedules are stored in this file."
        )
        self.show_selected()

    @property
    def selected(self) -> ScheduleRow | None:
        """The schedule the buttons and the runs table are about."""
        row = self.table.currentIndex().row()
        records = self.model.records
        return records[row] if 0 <= row < len(records) else None

    def select_schedule(self, workflow_name: str) -> bool:
        """Select the schedule of `workflow_name`; False when there is none."""
        for i, r in enumerate(self.model.records):
            if r.workflow_name == workflow_name:
                self.table.selectRow(i)
                return True
        return False

    def show_selected(self) -> None:
        """The buttons' state and the selected schedule's recent runs."""
        row = self.selected
        reason = schedule_firing_reason(self.session)
        busy = self._trigger_task is not None and not self._trigger_task.done()
        for button in (self.trigger_button, self.backfill_button):
            button.setEnabled(row is not None and reason is None and not busy)
            button.setToolTip(reason or button.toolTip())
        if row is None:
            self.runs_caption.setText("Select a schedule to see its runs.")
            self.runs_model.set_records([])
            return
        runs = recent_runs(self.session.reader, row.workflow_name)
        self.runs_model.set_records(runs)
        self.runs_caption.setText(
            f"Recent runs of {formatting.middle(row.workflow_name, 80)}'s schedule: "
            + (
                f"the latest {len(runs)}, newest first (double-click to open one)"
                if runs
                else "none yet"
            )
        )

    def on_run_activated(self, index: QModelIndex) -> None:
        """Open the double-clicked run on the Runs page."""
        run = self.runs_model.data(index, SEQ_ROLE)
        if run is not None:
            self.open_run.emit(str(run.exec_id))

    def on_trigger(self) -> None:
        """Start one run now (through the serving process in client mode)."""
        row = self.selected
        if row is None:
            return
        name = row.workflow_name
        try:
            result = trigger_schedule(self.session, name)
        except Exception as exc:  # a typed engine error, in words
            self.action_note.setText(describe_error(exc))
            return
        if inspect.isawaitable(result):
            self.action_note.setText(f"Triggering {name}: sent to the serving process…")
            self._trigger_task = track(
                asyncio.ensure_future(self._await_trigger(name, result))
            )
            self.show_selected()
            return
        self._triggered(name, result)

    async def _await_trigger(self, name: str, pending: Any) -> None:
        try:
            result = await pending
        except Exception as exc:  # CommandTimedOut, NotServed, a typed error
            self.action_note.setText(describe_error(exc))
        else:
            self._triggered(name, result)
        finally:
            self._trigger_task = None
            self.show_selected()

    def _triggered(self, name: str, exec_id: Any) -> None:
        self.action_note.setText(
            f"Triggered {name}: started run {exec_id}."
            if exec_id is not None
            else f"{name} was not triggered: its overlap policy skips while a run is active."
        )
        self.show_selected()

    def on_backfill(self) -> None:
        """Open (or raise) the backfill form for the selected schedule."""
        row = self.selected
        if row is None:
            return
        if self.backfill_dialog is not None:
            self.backfill_dialog.close()
        dialog = BackfillDialog(self.session, row, self)
        dialog.succeeded.connect(lambda _ids: self.show_selected())
        self.backfill_dialog = dialog
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()
