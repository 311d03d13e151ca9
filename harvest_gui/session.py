"""The one bridge to the engine: a writer (runtime + drive task) or a reader (change polling)."""

from __future__ import annotations

import asyncio
import importlib
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

from harvest_engine import (
    ExecutionFilter,
    HarvestError,
    PostgresReader,
    PostgresRuntime,
    SqliteReader,
    SqliteRuntime,
)
from harvest_engine import (
    __version__ as engine_version,
)
from harvest_gui import async_bridge
from harvest_gui.async_bridge import track
from harvest_gui.inspect.waiting import FileRows, WaitingReport, read_report
from harvest_gui.models.state_counts import StateCounter
from harvest_gui.target import Target, as_target, display_name, open_reader

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
        ScheduleRow,
        StagedSignal,
        TimerRow,
        WorkflowInfo,
    )

WRITER = "writer"
READ_ONLY = "read-only"
POLL_MS = 200
"""How often `data_version` is read; a file watcher misses WAL commits (QT-NOTES §2)."""
DRIVE_IDLE_S = 0.02
"""How often the serving drive looks for work it was not woken for (seconds; rt.serve's poll)."""


def register_app(rt: SqliteRuntime, module_name: str) -> None:
    """Register the workflows and activities an `--app` module exposes.

    The module either has ``register(rt)``, or lists ``WORKFLOWS`` and
    ``ACTIVITIES`` (and optionally ``QUERIES`` and ``UPDATES``).

    Raises:
        ImportError: the module cannot be imported.
        ValueError: it exposes neither convention.

    """
    module = importlib.import_module(module_name)
    register = getattr(module, "register", None)
    if callable(register):
        register(rt)
        return
    lists = ("WORKFLOWS", "ACTIVITIES", "QUERIES", "UPDATES")
    if not any(hasattr(module, name) for name in lists):
        raise ValueError(
            f"{module_name} exposes neither register(rt) nor WORKFLOWS/ACTIVITIES lists"
        )
    for fn in getattr(module, "WORKFLOWS", []):
        rt.register_workflow(fn)
    for fn in getattr(module, "ACTIVITIES", []):
        rt.register_activity(fn)
    for fn in getattr(module, "QUERIES", []):
        rt.register_query(fn)
    for fn in getattr(module, "UPDATES", []):
        rt.register_update(fn)


def load_workflows(module_name: str) -> list[WorkflowInfo]:
    """The workflows an `--app` module registers, without opening any file.

    The module's ``register(rt)`` (or its lists) runs against a throwaway
    in-memory runtime, closed at once: only its registry is kept. A read-only
    window uses them to replay runs (where a run waits, its call stack).
    """
    rt = SqliteRuntime.open_in_memory()
    try:
        register_app(rt, module_name)
        return list(rt.registry.workflows.values())
    finally:
        rt.close()


SERVING_LOGGER = "harvest_engine.serving"


class _ErrorRelay(logging.Handler):
    """Sends the serving loop's warning and error lines to a Qt signal (the status bar).

    Warnings too: a database that stops answering (a full disk, a lost
    Postgres connection) is a warning of the loop, which rides it out.
    """

    def __init__(self, signal: Any) -> None:
        super().__init__(level=logging.WARNING)
        self._signal = signal

    def emit(self, record: logging.LogRecord) -> None:
        self._signal.emit(record.getMessage())


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

    def list_schedules(self) -> list[ScheduleRow]:
        """Every stored schedule."""
        return self.reader.list_schedules()

    def waiting(
        self, detail: ExecutionDetail, history: list[HistoryEvent], rows: FileRows
    ) -> WaitingReport:
        """Where the run stands: replayed with the loaded code, else from the file's rows."""
        return read_report(detail, history, rows, workflows=self.workflows)

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


class ReaderSession(Session):
    """Inspector mode: `SqliteReader` only, no lock, nothing written."""

    @classmethod
    def open(cls, path: Target, app_module: str | None = None) -> ReaderSession:
        """Open `path` read-only; with `app_module`, load its workflow code for replays.

        Raises:
            NotAHarvestDatabase: missing, not SQLite, or not a harvest file.
            SchemaTooNew: written by a newer harvest.
            ImportError, ValueError: the app module cannot be loaded (the
                file is closed again).

        """
        p = as_target(path)
        session = cls(p, open_reader(p))
        if app_module:
            try:
                session.workflows = load_workflows(app_module)
            except Exception:
                # The file is still worth reading without the code; the
                # Stack tab says it is not available.
                session.close()
                raise
        return session


class WriterSession(Session):
    """Writer mode: an embedded `SqliteRuntime` that serves the file on the qasync loop.

    The drive task is `rt.serve()`: it applies commands other processes
    queue (`HarvestClient`, the CLI, a client-mode window), fires schedules
    and drives every run with ready work in short transactions, then sleeps
    until the next due time or a wake; async activity bodies await on the
    same loop, so the window keeps painting while runs progress.
    """

    mode = WRITER
    drive_interval = DRIVE_IDLE_S
    """The server's poll: commits by other processes, bodies finished while it waited."""

    def __init__(
        self,
        path: Target,
        runtime: SqliteRuntime,
        reader: SqliteReader | PostgresReader,
    ) -> None:
        super().__init__(path, reader)
        self.runtime = runtime
        self.driving = False
        self._drive_task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._stopping: asyncio.Task[None] | None = None

    @classmethod
    def open(cls, path: Target, app_module: str | None = None) -> WriterSession:
        """Open `path` as its writer and register the app's workflows.

        Raises:
            DatabaseLocked: another writer holds the file.
            NotAHarvestDatabase: not SQLite, or not a harvest file.
            SchemaTooNew: written by a newer harvest.

        """
        p = as_target(path)
        if app_module:  # a typo in --app must not leave a new, empty database behind
            importlib.import_module(app_module)
        # A Postgres database: this window is one worker of many.
        runtime = (
            PostgresRuntime.connect(p) if isinstance(p, str) else SqliteRuntime.open(p)
        )
        try:
            reader = open_reader(p)
            if app_module:
                register_app(runtime, app_module)
        except BaseException:
            runtime.close()
            raise
        return cls(p, runtime, reader)

    @property
    def lock_text(self) -> str:
        """Who holds the writer lock: this window."""
        if isinstance(self.path, str):
            return (
                "lock: none (one Postgres worker of many; rows are locked per decision)"
            )
        return f"lock: held by this window ({self.path.name}.lock)"

    @property
    def can_write(self) -> bool:
        """Writer sessions can act on runs."""
        return True

    def waiting(
        self, detail: ExecutionDetail, history: list[HistoryEvent], rows: FileRows
    ) -> WaitingReport:
        """Where the run stands, replayed by the embedded runtime with its registered code."""
        return read_report(detail, history, rows, runtime=self.runtime)

    def start_driving(self) -> None:
        """Start the drive task on the running qasync loop (no-op if already driving)."""
        if self._drive_task is None or self._drive_task.done():
            self.driving = True
            previous, self._stopping = self._stopping, None
            self._stop = asyncio.Event()
            self._drive_task = track(
                asyncio.ensure_future(self._drive(previous, self._stop))
            )

    def stop_driving(self) -> asyncio.Task[None] | None:
        """Ask the server to stop (running bodies get its grace); returns the task to await."""
        self.driving = False
        task, self._drive_task = self._drive_task, None
        if self._stop is not None:
            self._stop.set()
        if task is not None and not task.done():
            self._stopping = task
        return task

    async def _drive(
        self, previous: asyncio.Task[None] | None, stop: asyncio.Event
    ) -> None:
        if previous is not None and not previous.done():
            # A runtime serves once at a time: let the stopping server unwind.
            await asyncio.wait([previous])
        if stop.is_set():
            return
        # The server logs a failing run and keeps the others moving (guide §6);
        # the window shows that log line in its status bar.
        relay = _ErrorRelay(self.drive_error)
        serving_log = logging.getLogger(SERVING_LOGGER)
        serving_log.addHandler(relay)
        try:
            await self.runtime.serve(stop, poll_interval=self.drive_interval)
        except HarvestError as exc:
            self.drive_error.emit(str(exc))
        finally:
            serving_log.removeHandler(relay)

    async def aclose(self) -> None:
        """Stop serving, wait until it has unwound (cut short after 5 s), then close."""
        task = self.stop_driving()
        if task is not None and not task.done():
            _, pending = await asyncio.wait([task], timeout=5)
            for left in pending:
                left.cancel()
        self.close()

    def close(self) -> None:
        """Stop driving, close the reader and the runtime (frees the lock).

        Prefer `aclose()` while the loop runs: it lets a pass in flight unwind
        before the runtime closes.
        """
        if self.closed:
            return
        task = self.stop_driving()
        if task is not None and not task.done():
            task.cancel()
        super().close()
        self.runtime.close()
