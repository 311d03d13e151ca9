"""The one bridge to the engine: a database opened as its reader or its writer (runtime + serving task)."""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvest_engine import (
    HarvestError,
    PostgresReader,
    PostgresRuntime,
    Runtime,
    SqliteReader,
    SqliteRuntime,
)
from harvest_gui.async_bridge import track
from harvest_gui.inspect.waiting import FileRows, WaitingReport, read_report
from harvest_gui.session_base import POLL_MS, READ_ONLY, Session
from harvest_gui.target import Target, as_target, codec, open_reader

if TYPE_CHECKING:
    from types import ModuleType

    from harvest_engine import (
        ExecutionDetail,
        HistoryEvent,
        WorkflowInfo,
    )

# Session, the base both modes share, lives in session_base; views import it from here.
__all__ = [
    "DRIVE_IDLE_S",
    "POLL_MS",
    "READ_ONLY",
    "SERVING_LOGGER",
    "WRITER",
    "ReaderSession",
    "Session",
    "WriterSession",
    "load_module",
    "load_workflows",
    "register_app",
]

WRITER = "writer"
DRIVE_IDLE_S = 0.02
"""How often the serving drive looks for work it was not woken for (seconds; rt.serve's poll)."""


def load_module(spec: str) -> ModuleType:
    """The workflow code `spec` names: a dotted module name, or a ``.py`` file's path.

    A file is imported under a name of its own (``harvest_code_<stem>_<hash>``),
    so two files called ``workflows.py`` do not replace each other.

    Raises:
        ImportError: no such module or file, or importing it failed.

    """
    text = spec.strip()
    if not text:
        raise ImportError("no module name or .py file given")
    if text.endswith(".py") or "/" in text or "\\" in text:
        path = Path(text).expanduser().resolve()
        if not path.is_file():
            raise ImportError(f"{text}: no such .py file")
        digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
        name = f"harvest_code_{path.stem}_{digest}"
        found = importlib.util.spec_from_file_location(name, path)
        if found is None or found.loader is None:
            raise ImportError(f"{text}: not a Python file")
        module = importlib.util.module_from_spec(found)
        sys.modules[name] = module
        try:
            found.loader.exec_module(module)
        except BaseException as exc:
            del sys.modules[name]
            if isinstance(exc, Exception) and not isinstance(exc, ImportError):
                raise ImportError(f"{text}: {type(exc).__name__}: {exc}") from exc
            raise
        return module
    return importlib.import_module(text)


def register_app(rt: Runtime, module_name: str) -> None:
    """Register the workflows and activities an `--app` module exposes.

    The module either has ``register(rt)``, or lists ``WORKFLOWS`` and
    ``ACTIVITIES`` (and optionally ``QUERIES`` and ``UPDATES``).
    `module_name` may also be a ``.py`` file's path (`load_module`).

    Raises:
        ImportError: the module cannot be imported.
        ValueError: it exposes neither convention.

    """
    module = load_module(module_name)
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
                session.load_code(app_module)
            except Exception:
                # The file is still worth reading without the code; the
                # Stack tab says it is not available.
                session.close()
                raise
        return session

    def load_code(self, spec: str) -> list[str]:
        """Load workflow code for replays; the names of its workflows.

        Raises:
            ImportError, ValueError: the code cannot be loaded (nothing changes).
        """
        self.workflows = load_workflows(spec)
        self.code_module = spec
        return sorted(info.name for info in self.workflows)


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
        runtime: Runtime,
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
            load_module(app_module)
        # A Postgres database: this window is one worker of many.
        runtime = (
            PostgresRuntime.connect(p, codec=codec())
            if isinstance(p, str)
            else SqliteRuntime.open(p, codec=codec())
        )
        try:
            reader = open_reader(p)
            if app_module:
                register_app(runtime, app_module)
        except BaseException:
            runtime.close()
            raise
        session = cls(p, runtime, reader)
        session.code_module = app_module or None
        return session

    def load_code(self, spec: str) -> list[str]:
        """Register the code's workflows on this writer; the names it registered.

        Raises:
            ImportError, ValueError: the code cannot be loaded.
        """
        before = set(self.runtime.registry.workflows)
        check = SqliteRuntime.open_in_memory()  # a module that fails leaves no half
        try:
            register_app(check, spec)
        finally:
            check.close()
        register_app(self.runtime, spec)
        self.code_module = spec
        return sorted(set(self.runtime.registry.workflows) - before) or sorted(before)

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
        if (
            detail.state == "ENQUEUED"
        ):  # its place, and the limit the next admission meets
            waits = self.runtime.where_waiting(detail.exec_id)
            return WaitingReport(running=True, waits=waits)
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
