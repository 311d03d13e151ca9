"""CrashDemoView: a worker is SIGKILLed mid-activity and the run resumes from history, narrated."""

from __future__ import annotations

import asyncio
import os
import signal
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from harvest_engine import HarvestError
from harvest_gui.async_bridge import async_slot, track
from harvest_gui.demo.crash_workflows import read_marks
from harvest_gui.forms.error_text import describe_error
from harvest_gui.views.crash_demo_script import CrashDemoScript, DemoResult
from harvest_gui.views.timeline_view import TimelineView

if TYPE_CHECKING:
    import subprocess

    from harvest_gui.session import Session

STAGES = 7
"""The demo's stages, each one narrated line (Step stops at every one)."""
SPEEDS = (("Slow: half speed", 0.5), ("Normal speed", 1.0), ("Fast: double speed", 2.0))
"""What the speed box offers: the rest between stages is `pause` divided by it."""


class CrashDemoView(CrashDemoScript, QWidget):
    """Runs the crash-recovery demo in `workdir`, step by step, and explains each step.

    Args:
        workdir: where the demo file, the marks file and the worker log go.
        seconds: how long the slow step takes.
        pause: seconds to rest between steps so a person can read them (tests: 0).

    A presenter can Pause (the demo holds at the end of each stage until Step or
    Continue; a worker still running is frozen with SIGSTOP meanwhile, so the
    activity it runs stays mid-flight) and choose the speed of the rests.

    Signals:
        finished(bool): the demo ended (True when the run completed after the crash).
    """

    finished = Signal(bool)

    def __init__(self, workdir: Path, seconds: float = 4.0, pause: float = 1.5) -> None:
        super().__init__()
        self.setObjectName("crashDemoView")
        self.setWindowTitle("Crash-recovery demo")
        self.workdir = Path(workdir)
        self.db = self.workdir / "crash-demo.db"
        self.marks = self.workdir / "marks.txt"
        self.seconds = seconds
        self.pause = pause
        self.session: Session | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        self.result = DemoResult()
        self.task: asyncio.Task[Any] | None = None
        self.steps = QListWidget()
        self.steps.setObjectName("demoSteps")
        self.steps.setAccessibleName("What is happening")
        self.steps.setWordWrap(True)
        self.status = QLabel("Press “Run the demo” to start.")
        self.status.setObjectName("demoStatus")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setWordWrap(True)
        self.pending = self._table(
            "demoPending", ["Task", "Status", "Attempt", "Since"]
        )
        self.ran = self._table("demoMarks", ["Time", "Step", "Event", "Process"])
        self.timeline = TimelineView()
        self.run_button = QPushButton("&Run the demo")
        self.run_button.setObjectName("demoRun")
        self.run_button.clicked.connect(self.on_run_clicked)
        self._build_controls()
        tables = QSplitter(Qt.Orientation.Horizontal)
        for title, table in (
            ("Pending tasks (as the file says)", self.pending),
            ("Step bodies that ran (marks file)", self.ran),
        ):
            box = QWidget()
            box_layout = QVBoxLayout(box)
            box_layout.setContentsMargins(0, 0, 0, 0)
            box_layout.addWidget(QLabel(title))
            box_layout.addWidget(table)
            tables.addWidget(box)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(tables)
        right.addWidget(self.timeline)
        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(self.steps)
        body.addWidget(right)
        body.setSizes([420, 780])
        # The controls have a row of their own: beside the status they moved down
        # each time a longer stage text wrapped, and a click on Step missed.
        controls = QHBoxLayout()
        controls.addWidget(self.stage_label)
        controls.addStretch(1)
        controls.addWidget(self.pause_button)
        controls.addWidget(self.step_button)
        controls.addWidget(self.speed)
        controls.addWidget(self.run_button)
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.status)
        layout.addWidget(body, 1)
        self.resize(1240, 760)

    def _build_controls(self) -> None:
        """Pause, Step and the speed box, so a presenter can stop at every stage."""
        self.stage = 0
        self._go = asyncio.Event()
        self.stage_label = QLabel("")
        self.stage_label.setObjectName("demoStage")
        self.pause_button = QPushButton("&Pause")
        self.pause_button.setObjectName("demoPause")
        self.pause_button.setCheckable(True)
        self.pause_button.setToolTip(
            "Hold at the end of each stage until Step (the worker is frozen meanwhile)"
        )
        self.pause_button.toggled.connect(self.on_pause_toggled)
        self.step_button = QPushButton("&Step ▶")
        self.step_button.setObjectName("demoStep")
        self.step_button.setToolTip("Go on to the next stage")
        self.step_button.setEnabled(False)
        self.step_button.clicked.connect(self.on_step)
        self.speed = QComboBox()
        self.speed.setObjectName("demoSpeed")
        self.speed.setAccessibleName("Demo speed")
        for text, factor in SPEEDS:
            self.speed.addItem(text, factor)
        self.speed.setCurrentIndex(1)

    def on_pause_toggled(self, paused: bool) -> None:
        """Pause holds at the next stage's end; Continue lets the demo run on."""
        self.pause_button.setText("&Continue" if paused else "&Pause")
        self.step_button.setEnabled(paused)
        if not paused:
            self._go.set()

    def on_step(self) -> None:
        """Go on to the next stage (while paused)."""
        self._go.set()

    def rest_seconds(self) -> float:
        """The rest between stages at the chosen speed."""
        return self.pause / float(self.speed.currentData() or 1.0)

    @staticmethod
    def _table(name: str, headers: list[str]) -> QTableWidget:
        table = QTableWidget(0, len(headers))
        table.setObjectName(name)
        table.setHorizontalHeaderLabels(headers)
        table.horizontalHeader().setStretchLastSection(True)
        table.verticalHeader().hide()
        table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        return table

    # -- narration ------------------------------------------------------------------------

    def say(self, text: str) -> None:
        """Narrate one step."""
        self.steps.addItem(f"{self.steps.count() + 1}. {text}")
        self.steps.scrollToBottom()
        self.status.setText(text)
        self.stage = self.steps.count()
        self.stage_label.setText(f"Stage {self.stage} of {STAGES}")

    async def gate(self, *, thaw: bool = True) -> None:
        """Let a person read the stage: rest, or hold while paused until Step.

        A worker that still runs is frozen (SIGSTOP) while the demo waits, so
        what the stage describes is still true when it goes on; `thaw=False`
        leaves it frozen (the stage before its kill).
        """
        paused = self.pause_button.isChecked()
        if not paused and not self.rest_seconds():
            return
        frozen = self._freeze_worker(True)
        try:
            if paused:
                self._go.clear()
                self.stage_label.setText(
                    f"Stage {self.stage} of {STAGES}: paused, Step goes on"
                )
                await self._go.wait()
                self.stage_label.setText(f"Stage {self.stage} of {STAGES}")
            else:
                await asyncio.sleep(self.rest_seconds())
        finally:
            if frozen and thaw:
                self._freeze_worker(False)

    def _freeze_worker(self, freeze: bool) -> bool:
        """SIGSTOP (or SIGCONT) a live worker; whether one was signalled."""
        worker = self.worker
        if worker is None or worker.poll() is not None:
            return False
        os.kill(worker.pid, signal.SIGSTOP if freeze else signal.SIGCONT)
        return True

    # -- views ----------------------------------------------------------------------------

    def refresh_views(self) -> None:
        """Re-read the pending tasks, the marks and the timeline."""
        s, exec_id = self.session, self.result.exec_id
        if s is None or s.closed or not exec_id:
            return
        tasks = s.pending_tasks(exec_id)
        self.pending.setRowCount(len(tasks))
        for r, t in enumerate(tasks):
            cells = (t.name, t.status, str(t.attempt), _clock(t.scheduled_at))
            for c, text in enumerate(cells):
                self.pending.setItem(r, c, QTableWidgetItem(text))
        marks = read_marks(self.marks)
        self.ran.setRowCount(len(marks))
        for r, (at, step, what, pid) in enumerate(marks):
            who = "worker" if pid == self.result.worker_pid else "this window"
            cells = (
                _clock(datetime.fromtimestamp(at, UTC)),
                step,
                what,
                f"{who} (pid {pid})",
            )
            for c, text in enumerate(cells):
                self.ran.setItem(r, c, QTableWidgetItem(text))
        history = s.load_history(exec_id)
        # The attempt SIGKILL cut short is in the file: the reopen recorded it LOST.
        attempts = list(s.activity_attempts(exec_id))
        self.timeline.show_history(history, attempts, datetime.now(UTC))

    # -- the demo -------------------------------------------------------------------------

    @async_slot()
    async def on_run_clicked(self) -> None:
        """Run the demo (the button is greyed while it runs)."""
        await self.run()

    def start(self) -> asyncio.Task[Any]:
        """Start the demo as a tracked task on the running loop."""
        self.task = track(asyncio.ensure_future(self.run()))
        return self.task

    async def run(self) -> DemoResult:
        """Every step, narrated; errors are narrated too, never raised."""
        self.run_button.setEnabled(False)
        self.stage = 0
        ok = False
        try:
            await self._steps()
            ok = self.result.completed
        except asyncio.CancelledError:
            self.say("The demo was stopped.")
            raise
        except (HarvestError, OSError, TimeoutError, RuntimeError) as exc:
            self.say(f"The demo stopped: {describe_error(exc)}")
        finally:
            self.kill_worker()
            self._ended()
            self.finished.emit(ok)
        return self.result

    def _ended(self) -> None:
        """The demo is over: say so, and leave no Continue or Step with nothing to go on to.

        Pause stays enabled: checked before Run, it holds the next run at
        its first stage.
        """
        self.pause_button.setChecked(False)
        self.stage_label.setText(f"Stage {self.stage} of {STAGES}: done")
        self.run_button.setEnabled(True)

    # -- closing --------------------------------------------------------------------------

    def kill_worker(self) -> None:
        """Make sure no worker outlives the demo."""
        if self.worker is not None and self.worker.poll() is None:
            self.worker.kill()
            self.worker.wait(5)

    async def aclose(self) -> None:
        """Stop the demo, the worker and the session (the window's close calls this)."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.wait([self.task], timeout=5)
        self.kill_worker()
        session, self.session = self.session, None
        if session is not None:
            await session.aclose()

    def closeEvent(self, event: Any) -> None:
        """Close: stop everything; the session closes on the loop when one runs."""
        self.kill_worker()
        try:
            asyncio.get_running_loop()
            track(asyncio.ensure_future(self.aclose()))
        except RuntimeError:
            if self.session is not None:
                self.session.close()
                self.session = None
        super().closeEvent(event)


def _clock(at: datetime | None) -> str:
    return "" if at is None else at.astimezone().strftime("%H:%M:%S.%f")[:-3]
