"""The crash-recovery demo's script: start a worker, SIGKILL it mid-activity, reopen, tally."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import harvest_gui
from harvest_engine import ExecutionFilter, HarvestError
from harvest_gui.demo.crash_workflows import DEMO_WORKFLOW_ID, STEPS, read_marks
from harvest_gui.session import ReaderSession, WriterSession

if TYPE_CHECKING:
    from PySide6.QtWidgets import QListWidget

    from harvest_gui.session import Session

APP_MODULE = "harvest_gui.demo.crash_workflows"
SLOW_STEP = "pack_parcel"


@dataclass
class DemoResult:
    """What the demo saw, for the narration and the tests."""

    exec_id: str = ""
    worker_pid: int = 0
    worker_exit: int | None = None
    killed_mid_activity: bool = False
    stranded_seen: bool = False
    completed: bool = False
    starts: dict[str, list[int]] = field(default_factory=dict)
    completions_in_history: dict[str, int] = field(default_factory=dict)


class CrashDemoScript:
    """The demo's steps, mixed into `CrashDemoView` (a QWidget), which narrates them.

    The view owns the state below (set in its ``__init__``) and the narration
    (`say`, `rest`, `refresh_views`); `run` there calls `_steps` here.
    """

    if TYPE_CHECKING:
        workdir: Path
        db: Path
        marks: Path
        seconds: float
        session: Session | None
        worker: subprocess.Popen[bytes] | None
        result: DemoResult
        steps: QListWidget

        def say(self, text: str) -> None:
            """Narrate one step (CrashDemoView)."""

        async def gate(self, *, thaw: bool = True) -> None:
            """Rest after a stage, or hold it while paused (CrashDemoView)."""

        def refresh_views(self) -> None:
            """Re-read what the view shows (CrashDemoView)."""

    async def _steps(self) -> None:
        self._reset_files()
        self.worker = self._spawn_worker()
        self.result.worker_pid = self.worker.pid
        self.say(
            f"A worker process starts the order workflow on {self.db.name}. Its steps are "
            f"prepare_order, pack_parcel (a sync body that takes {self.seconds:g} s) and ship_order."
        )
        await self.gate()
        reader = await self._open_reader()
        self.say(
            f"This window opens the same file read-only beside the worker (pid {self.worker.pid}):"
            " no lock taken, nothing written; it follows the worker's commits as they land."
        )
        await self.gate()
        await self._until(
            lambda: self._task_status(reader) == "RUNNING", 30, "pack_parcel start"
        )
        self.refresh_views()
        self.say(
            "pack_parcel is RUNNING in the worker: its claim is committed. prepare_order has "
            "completed, and its result is in the history."
        )
        # The worker stays frozen from here to the kill: what the read below
        # sees is what the kill meets (thawed, a body whose time ran out while
        # it was held would finish first on a busy machine).
        await self.gate(thaw=False)
        os.kill(self.worker.pid, signal.SIGSTOP)
        self.result.killed_mid_activity = self._task_status(reader) == "RUNNING"
        os.kill(self.worker.pid, signal.SIGKILL)
        await self._until(
            lambda: self.worker is not None and self.worker.poll() is not None,
            10,
            "the worker to die",
        )
        self.result.worker_exit = self.worker.returncode
        self.say(
            f"SIGKILL: the worker (pid {self.worker.pid}) died in the middle of pack_parcel "
            f"(exit status {self.worker.returncode}); no clean-up code ran."
        )
        await self.gate()
        await asyncio.sleep(
            0.3
        )  # any last commit of the dead process would have landed
        self.refresh_views()
        self.result.stranded_seen = self._task_status(reader) == "RUNNING"
        self.say(
            "The file still says pack_parcel is RUNNING, yet no process runs it: a stranded task. "
            "Nothing is lost: the claim was committed, its result never was."
        )
        await self.gate()
        await self._reopen_as_writer()
        self.say(
            "This window reopens the file as its writer. Opening records the killed attempt as "
            "LOST (the timeline shows it) and puts the stranded task back to "
            "PENDING, so pack_parcel runs again here with the same idempotency key "
            "(at-least-once); prepare_order is not run again: replay takes its recorded result."
        )
        await self.gate()
        done = {"COMPLETED", "FAILED", "TERMINATED", "CANCELLED", "TIMED_OUT"}
        writer = self.session
        if writer is None:
            raise RuntimeError("the writer session closed while the demo ran")
        await self._until(
            lambda: writer.describe(self.result.exec_id).state in done,
            self.seconds + 30,
            "the run to finish",
        )
        if isinstance(writer, WriterSession):
            task = writer.stop_driving()
            if task is not None:
                await asyncio.wait([task], timeout=5)
        self.refresh_views()
        self._tally()
        r = self.result
        n = {step: _times(len(r.starts.get(step, []))) for step in STEPS}
        self.say(
            f"The run {writer.describe(r.exec_id).state}. Step bodies that ran: prepare_order "
            f"{n['prepare_order']} (in the worker), pack_parcel {n['pack_parcel']} (killed in "
            f"the worker, then again here), ship_order {n['ship_order']} (here). The history "
            "holds one ActivityCompleted per step; the timeline shows the killed attempt and "
            "the re-run."
        )

    def _reset_files(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm", ".lock"):
            Path(str(self.db) + suffix).unlink(missing_ok=True)
        self.marks.unlink(missing_ok=True)
        self.result = DemoResult()
        self.steps.clear()

    def _spawn_worker(self) -> subprocess.Popen[bytes]:
        root = str(Path(harvest_gui.__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (root, env.get("PYTHONPATH", "")) if p
        )
        log = (self.workdir / "worker.log").open("wb")
        try:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "harvest_gui.demo.crash_worker",
                    str(self.db),
                    str(self.marks),
                    str(self.seconds),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        finally:
            log.close()

    async def _open_reader(self) -> ReaderSession:
        deadline = time.monotonic() + 30
        while True:
            if self.worker is not None and self.worker.poll() is not None:
                log = (self.workdir / "worker.log").read_text(errors="replace")[-400:]
                raise RuntimeError(f"the worker exited early: {log.strip()}")
            try:
                reader = ReaderSession.open(self.db)
            except HarvestError:
                reader = None
            if reader is not None:
                runs = reader.list_executions(
                    ExecutionFilter().workflow_id(DEMO_WORKFLOW_ID)
                )
                if runs.executions:
                    self.result.exec_id = str(runs.executions[0].exec_id)
                    self._use(reader)
                    return reader
                reader.close()
            if time.monotonic() > deadline:
                raise TimeoutError("the worker did not start the demo run within 30 s")
            await asyncio.sleep(0.05)

    async def _reopen_as_writer(self) -> None:
        old = self.session
        self.session = None
        if old is not None:
            await old.aclose()
        writer = WriterSession.open(self.db, APP_MODULE)
        self._use(writer)
        writer.start_driving()

    def _use(self, session: Session) -> None:
        self.session = session
        session.changed.connect(self.refresh_views)

    def _task_status(self, session: Session) -> str | None:
        if session.closed:
            return None
        for task in session.pending_tasks(self.result.exec_id):
            if task.name == SLOW_STEP:
                return task.status
        return None

    async def _until(self, pred: Any, seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        while not pred():
            if time.monotonic() > deadline:
                raise TimeoutError(f"gave up waiting for {what} after {seconds:g} s")
            await asyncio.sleep(0.05)

    def _tally(self) -> None:
        starts: dict[str, list[int]] = {}
        for _at, step, what, pid in read_marks(self.marks):
            if what == "start":
                starts.setdefault(step, []).append(pid)
        self.result.starts = starts
        if self.session is None:
            return
        history = self.session.load_history(self.result.exec_id)
        counts: dict[str, int] = {}
        for e in history:
            if e.type == "ActivityCompleted":
                name = str(e.attrs.get("name"))
                counts[name] = counts.get(name, 0) + 1
        self.result.completions_in_history = counts
        self.result.completed = (
            self.session.describe(self.result.exec_id).state == "COMPLETED"
        )


def _times(n: int) -> str:
    return {0: "never", 1: "once", 2: "twice"}.get(n, f"{n} times")
