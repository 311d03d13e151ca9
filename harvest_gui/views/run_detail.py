"""RunDetailView: the tabs (Summary, History, Timeline, Attempts, Progress, Pending, Stack, Logs, Costs) of a run."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QStackedWidget, QTabWidget, QVBoxLayout, QWidget

from harvest_engine import DatabaseCorrupt, ExecutionNotFound
from harvest_gui.inspect.formatting import fit_line, middle
from harvest_gui.inspect.waiting import FileRows
from harvest_gui.views.attempts import AttemptsView
from harvest_gui.views.costs import CostsView
from harvest_gui.views.elided import ElidedLabel
from harvest_gui.views.history import HistoryView
from harvest_gui.views.logs import LogsView
from harvest_gui.views.pending import PendingView
from harvest_gui.views.progress import ProgressView
from harvest_gui.views.stack import StackView
from harvest_gui.views.summary import SummaryView
from harvest_gui.views.timeline_view import TimelineView

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_gui.session import Session

TIMELINE_REDRAW_S = 1.0
"""How often a running run's timeline is redrawn when its history did not change."""
(
    TAB_SUMMARY,
    TAB_HISTORY,
    TAB_TIMELINE,
    TAB_ATTEMPTS,
    TAB_PROGRESS,
    TAB_PENDING,
    TAB_STACK,
    TAB_LOGS,
    TAB_COSTS,
) = range(9)


class RunDetailView(QWidget):
    """Everything about the selected run, kept current as the file changes.

    Signals:
        open_run(str): a link to another run was followed.
    """

    open_run = Signal(str)

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.setObjectName("runDetail")
        self.session = session
        self.exec_id: str | None = None
        self._seen: tuple[Any, ...] | None = None
        self._timeline_drawn = 0.0
        self.listed_damage: Callable[[str], str | None] = lambda _exec_id: None
        """Why the run list flags a run as damaged (the main window wires the model in)."""
        self.title = ElidedLabel("runTitle", Qt.TextElideMode.ElideMiddle)
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.2)
        font.setBold(True)
        self.title.setFont(font)
        self.summary = SummaryView()
        self.history = HistoryView()
        self.timeline = TimelineView()
        self.attempts = AttemptsView()
        self.progress = ProgressView()
        self.pending = PendingView()
        self.stack_view = StackView()
        self.logs = LogsView()
        self.costs = CostsView()
        self.tabs = QTabWidget()
        self.tabs.setObjectName("runTabs")
        self.tabs.setAccessibleName("Run detail tabs")
        for widget, name in (
            (self.summary, "&Summary"),
            (self.history, "&History"),
            (self.timeline, "&Timeline"),
            (self.attempts, "&Attempts"),
            (self.progress, "P&rogress"),
            (self.pending, "&Pending"),
            (self.stack_view, "Stac&k"),
            (self.logs, "&Logs"),
            (self.costs, "&Costs"),
        ):
            self.tabs.addTab(widget, name)
        self.summary.open_run.connect(self.open_run)
        self.pending.open_run.connect(self.open_run)
        self.timeline.event_clicked.connect(self.on_event_clicked)
        self.empty = QLabel(
            "Select a run in the list to see its summary, history and timeline."
        )
        self.empty.setObjectName("runDetailEmpty")
        self.empty.setTextFormat(Qt.TextFormat.PlainText)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)
        page = QWidget()
        page_layout = QVBoxLayout(page)
        page_layout.setContentsMargins(0, 0, 0, 0)
        self.damaged = QLabel()
        self.damaged.setObjectName("runDamagedBanner")
        self.damaged.setTextFormat(Qt.TextFormat.PlainText)
        self.damaged.setWordWrap(True)
        self.damaged.setStyleSheet(
            "background: #fff3cd; color: #5c4400; border: 1px solid #e0b84c; padding: 6px;"
        )
        self.damaged.hide()
        page_layout.addWidget(self.title)
        page_layout.addWidget(self.damaged)
        page_layout.addWidget(self.tabs, 1)
        # Takes the room the hidden tabs leave (a damaged run), so the title and
        # the banner stay at the top in their own size rather than spread out.
        page_layout.addStretch(0)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty)
        self.stack.addWidget(page)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stack)

    def show_damaged(self, exc: BaseException) -> None:
        """A banner instead of the tabs: this run's rows cannot be read, the others can."""
        self._seen = None
        self.title.setText(f"Run {self.exec_id}: damaged")
        reason = getattr(exc, "reason", None) or str(exc)
        self.damaged.setText(
            fit_line(
                f"This run's stored rows are damaged ({reason}), so its summary, "
                "history and timeline cannot be shown. The other runs in the file read "
                "as usual; a backup copy of the file is the way to recover this one."
            )
        )
        self.damaged.show()
        self.tabs.hide()
        self.stack.setCurrentIndex(1)

    def show_listed_damage(self, reason: str | None) -> None:
        """The banner above readable tabs when the listing flags the run as damaged.

        A run may read (its payloads parse) while the listing's checks of its row
        against its history fail; what the tabs show may then be wrong, so the
        reason stays in view rather than the run looking sound.
        """
        if reason is None:
            self.damaged.hide()
            return
        self.damaged.setText(
            fit_line(
                f"The file flags this run as damaged ({reason}). What the tabs show "
                "was read from its rows as they are and may be wrong or incomplete."
            )
        )
        self.damaged.show()

    def show_run(self, exec_id: str | None) -> None:
        """Show `exec_id` (None: the empty page)."""
        if exec_id == self.exec_id:
            return
        self.exec_id = exec_id
        self._seen = None
        self.history.reset_filters()  # a filter typed for one run hid another's events
        if exec_id is None:
            self.stack.setCurrentIndex(0)
            return
        self.stack.setCurrentIndex(1)
        self.refresh()

    def refresh(self) -> None:
        """Re-read the run; a closed run that was already read is left alone."""
        if self.exec_id is None:
            return
        s = self.session
        try:
            detail = s.describe(self.exec_id)
            if self._seen is not None and self._seen[0] == detail and detail.closed_at:
                return
            history = s.load_history(self.exec_id)
            attempts = s.activity_attempts(self.exec_id)
            pending = (
                s.pending_tasks(self.exec_id),
                s.timers(self.exec_id),
                s.staged_signals(self.exec_id),
                s.mutexes(self.exec_id),
            )
            logs = s.workflow_logs(self.exec_id)
            events = s.events(self.exec_id)
            ledger = s.llm_ledger(self.exec_id)
            totals = s.llm_totals(self.exec_id)
        except ExecutionNotFound:
            self.title.setText(
                f"Run {self.exec_id} is no longer in the file (purged?)."
            )
            self.stack.setCurrentIndex(1)
            return
        except (DatabaseCorrupt, ValueError) as exc:  # a damaged row: this run only
            self.show_damaged(exc)
            return
        self.show_listed_damage(self.listed_damage(self.exec_id))
        self.tabs.show()
        shown = self._seen or (None,) * 5
        # The state stays in view however long the name and id are (the label elides
        # the middle; an id of a megabyte is cut before it reaches the label).
        title = (
            f"{middle(detail.workflow_name, 120)} · {middle(detail.workflow_id, 240)} "
            f"· {detail.state}"
        )
        if self.title.text() != title:
            self.title.setText(title)
        # Only the parts that changed are re-shown: re-setting an unchanged view
        # still repaints it, and a refresh comes with every commit (issue 6 stalls).
        key = (len(history), attempts)
        if shown[0] != detail or shown[1] != key:
            self.summary.show_run(detail, history)
            self.history.show_events(history)
        if shown[1] != key or (detail.closed_at is None and self._timeline_due()):
            now = detail.closed_at or datetime.now(UTC)
            self.timeline.show_history(history, attempts, now)
            self._timeline_drawn = time.monotonic()
        if shown[1] != key:
            self.attempts.show_attempts(list(attempts))
            exec_id = self.exec_id
            self.progress.show_progress(
                exec_id,
                events,
                history,
                lambda k, offset: s.stream_items(exec_id, k, offset),
            )
        if shown[0] != detail or shown[1] != key or shown[2] != pending:
            # A replay to the frontier: only when the run or its rows changed.
            report = s.waiting(
                detail,
                history,
                FileRows(tasks=pending[0], timers=pending[1], mutexes=pending[3]),
            )
            self.summary.show_waiting(report)
            self.pending.show_pending(*pending, report=report)
            self.stack_view.show_report(report)
        if shown[3] != logs:
            self.logs.show_logs(logs)
        if shown[4] != (ledger, totals):
            self.costs.show_costs(ledger, totals)
        self._seen = (detail, key, pending, logs, (ledger, totals))

    def _timeline_due(self) -> bool:
        """A running run's open bars grow to "now", redrawn at most once a second."""
        return time.monotonic() - self._timeline_drawn >= TIMELINE_REDRAW_S

    def on_event_clicked(self, seq: int) -> None:
        """A timeline item was clicked: show its event in History."""
        self.open_event(seq)

    def open_event(self, seq: int) -> bool:
        """Switch to History with event `seq` selected."""
        self.tabs.setCurrentIndex(TAB_HISTORY)
        return self.history.select_seq(seq)
