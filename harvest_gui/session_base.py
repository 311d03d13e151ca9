"""An open database as the views see it: its reads, re-read when another connection commits."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

from harvest_engine import (
    ExecutionFilter,
    HarvestError,
    PostgresReader,
    SqliteReader,
)
from harvest_engine import (
    __version__ as engine_version,
)
from harvest_gui import async_bridge
from harvest_gui.inspect.queues import place_of
from harvest_gui.inspect.waiting import FileRows, WaitingReport, read_report
from harvest_gui.state_counts import StateCounter
from harvest_gui.target import Target, display_name

if TYPE_CHECKING:
    from harvest_engine import (
        ActivityAttempt,
        ExecutionDetail,
        ExecutionId,
        ExecutionPage,
        HistoryEvent,
        LedgerRow,
        LedgerTotals,
        LogLine,
        PendingTask,
        QueueInfo,
        ScheduleRow,
        StagedSignal,
        TimerRow,
        WorkflowInfo,
    )

READ_ONLY = "read-only"
POLL_MS = 200
"""How often `data_version` is read; a file watcher misses WAL commits (QT-NOTES §2)."""


class Session(QObject):
    """An open database file, as the views see it.

    Every read goes through a `SqliteReader` on the file, in both modes; its
    `data_version` is polled on a QTimer, and `changed` fires when another
    connection (the embedded writer or another process) has committed.

    Signals:
        changed: the file has new commits; views re-read what they show.
        counts_ready(dict[str, int]): runs per state, after `request_counts`.
        refreshed(datetime): views were told to refresh at this time.
        drive_error(str): the writer's drive reported an error (plain text).
    """

    changed = Signal()
    counts_ready = Signal(object)
    refreshed = Signal(object)
    drive_error = Signal(str)

    mode = READ_ONLY

    def __init__(self, path: Target, reader: SqliteReader | PostgresReader) -> None:
        super().__init__()
        self.path = path
        self.name = display_name(path)
        """The file's name, or the Postgres URL with its password hidden."""
        self.reader = reader
        # The views read the file as they are built, right after this: that is the first refresh.
        self.last_refresh: datetime | None = datetime.now(UTC)
        self._version = reader.data_version()
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self.on_poll)
        self._timer.start()
        self.poll_failed = False
        self._counter = StateCounter(path, reader.counts_by_state)
        self._counter.counted.connect(self.counts_ready)
        self.closed = False
        self.workflows: list[WorkflowInfo] = []
        """Workflow code loaded for replays (`--app` in read-only mode)."""
        self.code_module: str | None = None
        """The workflow code loaded in this window: a module name or a .py path."""

    # -- change detection --------------------------------------------------------

    def on_poll(self) -> None:
        """Read `data_version`; announce a change when it moved."""
        if self.closed or self.poll_failed:
            return
        try:
            version = self.reader.data_version()
        except HarvestError as exc:  # the file vanished or broke under the window
            # Said once (not every POLL_MS); F5 or reopening tries again.
            self.poll_failed = True
            self._timer.stop()
            async_bridge.present_error(exc)
            return
        if version != self._version:
            self._version = version
            self.refresh()

    def refresh(self) -> None:
        """Tell the views to re-read now (and poll again, if an error stopped it)."""
        if not self.closed and self.poll_failed:
            self.poll_failed = False
            self._timer.start()
        self.last_refresh = datetime.now(UTC)
        self.changed.emit()
        self.refreshed.emit(self.last_refresh)

    # -- facts about the file --------------------------------------------------------

    @property
    def schema_version(self) -> int:
        """The file's schema version."""
        return int(self.reader.schema_version)

    @property
    def lock_text(self) -> str:
        """Who holds the writer lock, as far as this window knows."""
        return "lock: not taken (read-only; another process may write)"

    def serving_text(self) -> str | None:
        """Whether a serving process beats, in words; None when this window serves or reads only."""
        return None

    @property
    def can_write(self) -> bool:
        """Whether actions that change the file are available."""
        return False

    @property
    def engine_version(self) -> str:
        """The harvest_engine version in use."""
        return str(engine_version)

    # -- reads -------------------------------------------------------------------------

    def list_executions(self, flt: ExecutionFilter) -> ExecutionPage:
        """One page of runs."""
        return self.reader.list_executions(flt)

    def counts_by_state(self) -> dict[str, int]:
        """Runs per state, counted on the UI thread."""
        return self.reader.counts_by_state()

    def request_counts(self) -> None:
        """Ask for `counts_ready`: at once on a small file, from a worker on a big one."""
        self._counter.request()

    def describe(self, exec_id: str | ExecutionId) -> ExecutionDetail:
        """One run with its payloads."""
        return self.reader.describe(exec_id)

    def load_history(self, exec_id: str | ExecutionId) -> list[HistoryEvent]:
        """A run's events."""
        return self.reader.load_history(exec_id)

    def activity_attempts(self, exec_id: str | ExecutionId) -> list[ActivityAttempt]:
        """A run's activity attempts."""
        return self.reader.activity_attempts(exec_id)

    def pending_tasks(self, exec_id: str | ExecutionId) -> list[PendingTask]:
        """A run's unfinished activity tasks."""
        return self.reader.pending_tasks(exec_id)

    def timers(self, exec_id: str | ExecutionId) -> list[TimerRow]:
        """A run's unfired timers."""
        return self.reader.timers(exec_id)

    def staged_signals(self, exec_id: str | ExecutionId) -> list[StagedSignal]:
        """Signals the run has not taken in yet."""
        return self.reader.staged_signals(exec_id)

    def mutexes(self, exec_id: str | ExecutionId) -> list[Any]:
        """Mutex keys the run holds or waits for (rows with key, granted, queued_at)."""
        return list(self.reader.mutexes(exec_id))

    def llm_ledger(self, exec_id: str | ExecutionId) -> list[LedgerRow]:
        """A run's LLM calls."""
        return self.reader.llm_ledger(exec_id)

    def llm_totals(self, exec_id: str | ExecutionId) -> LedgerTotals:
        """A run's LLM calls summed."""
        return self.reader.llm_totals(exec_id)

    def workflow_logs(self, exec_id: str | ExecutionId) -> list[LogLine]:
        """A run's log lines."""
        return self.reader.workflow_logs(exec_id)

    def events(self, exec_id: str | ExecutionId) -> dict[str, Any]:
        """The events the run set (`ctx.set_event`): key to its last value."""
        return self.reader.events(exec_id)

    def stream_items(
        self, exec_id: str | ExecutionId, key: str, offset: int
    ) -> list[Any]:
        """A page of stream `key`'s rows from position `offset` (position, value, closed)."""
        return list(self.reader.stream_items(exec_id, key, offset))

    def queues(self) -> list[QueueInfo]:
        """Every flow-control queue: limits, running, waiting, oldest wait."""
        return list(self.reader.flow_reads().queue_infos())

    def list_schedules(self) -> list[ScheduleRow]:
        """Every stored schedule."""
        return self.reader.list_schedules()

    def waiting(
        self, detail: ExecutionDetail, history: list[HistoryEvent], rows: FileRows
    ) -> WaitingReport:
        """Where the run stands: replayed with the loaded code, else from the file's rows."""
        if detail.state == "ENQUEUED":
            return self.queue_report(detail)
        return read_report(detail, history, rows, workflows=self.workflows)

    def queue_report(self, detail: ExecutionDetail) -> WaitingReport:
        """An ENQUEUED run waits on its turn in its queue: where, from the file."""
        place = place_of(self.reader.flow_reads(), str(detail.exec_id), self.queues())
        return WaitingReport(running=True, waits=() if place is None else (place,))

    # -- closing --------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close; the async form exists so both modes close the same way."""
        self.close()

    def close(self) -> None:
        """Stop polling and close the file (safe to call twice)."""
        if self.closed:
            return
        self.closed = True
        self._timer.stop()
        self._counter.close()
        self.reader.close()
