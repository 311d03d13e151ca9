"""GUI benchmarks of issue 6: open a big file to a painted list, a 50k-event timeline, UI stalls.

    QT_QPA_PLATFORM=offscreen python -m bench.gui_bench [--runs N] [--events N] [--drive-runs N]
        [--drive-seconds S] [--file PATH] [--why]

`python -m bench` calls `run()` and writes the rows into bench/RESULTS.md.
Budgets (issue 6): list painted in <= 1 s for 1,000,000 runs; a 50,000-event
timeline in <= 1 s; no UI-thread stall over 50 ms while the writer drives runs.
These are measurements, not timed tests.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from typing import TYPE_CHECKING

import qasync
from PySide6.QtCore import QSettings, QTimer

from harvest_engine import HistoryEvent, SqliteRuntime, payloads
from harvest_engine.store.sqlite.schema import SCHEMA_VERSION
from harvest_gui.app import DEMO_APP, make_application
from harvest_gui.demo.seed import DEMO_ORDERS, register
from harvest_gui.settings import Settings
from harvest_gui.views.main_window import MainWindow
from harvest_gui.views.timeline_view import TimelineView

if TYPE_CHECKING:
    from collections.abc import Iterator

    from PySide6.QtWidgets import QApplication

BUDGET_OPEN_S = 1.0
BUDGET_TIMELINE_S = 1.0
BUDGET_STALL_MS = 50.0
BIG_FILE_FORMAT = 3  # 3: made with the 1 KiB pages of a new file (rebuilt too when its schema is older)
"""Bumped when `make_big_file` writes different rows, so a stale cached file is rebuilt."""
STATES = ("COMPLETED",) * 6 + ("RUNNING", "FAILED", "CANCELLED", "TIMED_OUT")
BATCH = 50_000


def big_file_path(runs: int) -> Path:
    """Where the big file is cached between bench runs."""
    return (
        Path(tempfile.gettempdir()) / f"harvest-gui-bench-v{BIG_FILE_FORMAT}-{runs}.db"
    )


def _big_rows(lo: int, hi: int) -> Iterator[tuple[object, ...]]:
    t0 = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1_000_000)
    for i in range(lo, hi):
        state = STATES[i % len(STATES)]
        at = t0 + i * 1_000_000
        closed = None if state == "RUNNING" else at + 500_000
        yield (
            i + 1,
            str(uuid.UUID(int=i + 1)),
            f"order_{i % 5}",
            f"bench-{i:08d}",
            state,
            "null",
            at,
            closed,
        )


def make_big_file(path: Path, runs: int) -> bool:
    """Write `runs` runs, each with its WorkflowStarted event, unless the file already has them.

    The schema comes from `SqliteRuntime.open`; the rows go in with plain
    `executemany` in one transaction (bench code may use sqlite3), which takes
    seconds where a million `start_workflow` calls take an hour.

    Returns:
        True when the file was (re)built now.

    """
    if path.exists():
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            try:
                have = conn.execute(
                    "SELECT max(id) FROM harvest_executions"
                ).fetchone()[0]
                version = conn.execute("PRAGMA user_version").fetchone()[0]
            except sqlite3.DatabaseError:
                have = version = None
        if have == runs and version == SCHEMA_VERSION:
            return False
    for leftover in (
        path,
        Path(f"{path}-wal"),
        Path(f"{path}-shm"),
        Path(f"{path}.lock"),
    ):
        leftover.unlink(missing_ok=True)
    SqliteRuntime.open(path).close()
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA synchronous = OFF")  # a scratch file: no fsync per page
        with conn:
            for lo in range(0, runs, BATCH):
                batch = list(_big_rows(lo, min(runs, lo + BATCH)))
                conn.executemany(
                    "INSERT INTO harvest_executions (id, exec_id, workflow_name, workflow_id, "
                    "state, input, started_at, closed_at, next_seq, needs_decision) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 2, 0)",
                    batch,
                )
                conn.executemany(
                    "INSERT INTO harvest_events (exec_id, seq, type, at, attrs) "
                    "VALUES (?, 1, 'WorkflowStarted', ?, ?)",
                    [
                        (
                            r[1],
                            r[6],
                            payloads.dumps(
                                {
                                    "attempt": 1,
                                    "exec_id": r[1],
                                    "input": None,
                                    "workflow_id": r[3],
                                    "workflow_name": r[2],
                                }
                            ),
                        )
                        for r in batch
                    ],
                )
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return True


def bench_open_list(app: QApplication, path: Path, work: Path) -> float:
    """Seconds from opening the file to the run list painted (best of three opens)."""
    best = float("inf")
    for attempt in range(3):
        ini = work / f"s{attempt}.ini"
        settings = Settings(QSettings(str(ini), QSettings.Format.IniFormat))
        window = MainWindow(settings)
        window.resize(1280, 800)
        window.show()
        app.processEvents()
        started = time.perf_counter()
        window.open_path(path, read_only=True)
        assert window.run_list is not None
        window.run_list.table.viewport().grab()  # forces a paint of the visible rows
        best = min(best, time.perf_counter() - started)
        window.close()
        app.processEvents()
    return best


def synthetic_history(events: int) -> list[HistoryEvent]:
    """A history of `events` events: activities, a timer and signals."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    out = [
        HistoryEvent(1, "WorkflowStarted", t0, {"workflow_name": "big", "attempt": 1})
    ]
    i = 0
    while len(out) < events - 1:
        at = t0 + timedelta(seconds=i)
        seq = len(out) + 1
        if i % 50 == 0:
            out.append(
                HistoryEvent(seq, "SignalReceived", at, {"name": "tick", "payload": i})
            )
        else:
            name = f"step_{i % 9}"
            out.append(
                HistoryEvent(
                    seq, "ActivityScheduled", at, {"activity_id": i, "name": name}
                )
            )
            out.append(
                HistoryEvent(
                    seq + 1,
                    "ActivityCompleted",
                    at + timedelta(seconds=0.6),
                    {"activity_id": i, "name": name, "attempt": 1, "result": i},
                )
            )
        i += 1
    out.append(
        HistoryEvent(len(out) + 1, "WorkflowCompleted", t0 + timedelta(seconds=i), {})
    )
    return out


def bench_timeline(app: QApplication, events: int) -> float:
    """Seconds to build and paint a timeline of `events` events."""
    history = synthetic_history(events)
    view = TimelineView()
    view.resize(900, 500)
    view.show()
    app.processEvents()
    started = time.perf_counter()
    view.show_history(history, [])
    view.grab()
    elapsed = time.perf_counter() - started
    view.close()
    return elapsed


class StallWatch:
    """Samples the UI thread's stack from a helper thread while a tick is late (`--why`)."""

    def __init__(self, late_s: float = 0.015) -> None:
        self.late_s = late_s
        self.last = time.perf_counter()
        self.samples: Counter[str] = Counter()
        self._ui = threading.get_ident()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(0.005):
            if time.perf_counter() - self.last < self.late_s:
                continue
            frame = sys._current_frames().get(self._ui)
            if frame is not None:
                stack = traceback.extract_stack(frame)[-9:]
                self.samples[
                    "\n".join(f"  {f.filename}:{f.lineno} {f.name}" for f in stack)
                ] += 1


def bench_stalls(
    app: QApplication, work: Path, runs: int, seconds: float, why: bool = False
) -> tuple[float, int, float, int]:
    """Longest gap between 5 ms ticks on the UI thread while the writer serves demo runs.

    Returns:
        (longest gap in seconds, ticks seen, 99th percentile gap in seconds,
        runs closed by the end).

    """
    path = work / "drive.db"
    rt = SqliteRuntime.open(path)
    register(rt)
    for i in range(runs):
        order = dict(DEMO_ORDERS[i % 3], id=f"B-{i}", cooling_off="1s")
        order.pop("flaky", None)
        rt.start_workflow_with_id("process_order", f"B-{i}", order)
    rt.close()
    settings = Settings(QSettings(str(work / "d.ini"), QSettings.Format.IniFormat))
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    window = MainWindow(settings, app_module=DEMO_APP)
    window.resize(1280, 800)
    window.show()
    gaps: list[float] = []
    done: list[int] = []
    watch = StallWatch()

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - watch.last)
        watch.last = now

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(tick)

    async def body() -> None:
        window.open_path(path)  # the drive task starts with the file
        # Opening and the first paint of the new page are bench_open_list's budget:
        # measure from the first painted frame on.
        await asyncio.sleep(0.1)
        timer.start()
        watch.last = time.perf_counter()
        if why:
            watch.start()
        await asyncio.sleep(seconds)
        timer.stop()
        if why:
            watch.stop()
        session = window.session
        assert session is not None
        counts = session.counts_by_state()
        done.append(counts["COMPLETED"] + counts["FAILED"])
        window.close_session()
        await asyncio.sleep(0.5)

    loop.run_until_complete(body())
    window.close()
    loop.close()
    asyncio.set_event_loop(None)
    if why:
        for stack, count in watch.samples.most_common(8):
            print(f"{count} samples (5 ms each) with the UI thread late in:\n{stack}")
    ordered = sorted(gaps)
    p99 = ordered[int(len(ordered) * 0.99)] if ordered else 0.0
    return (ordered[-1] if ordered else 0.0), len(gaps), p99, done[0]


WRITER_SCRIPT = """
import sys, time
from harvest_engine import SqliteRuntime, workflow

@workflow
async def order_0(ctx, _):
    return None

rt = SqliteRuntime.open(sys.argv[1])
rt.register_workflow(order_0)
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[2])
n = 0
while time.monotonic() < end:
    rt.start_workflow_with_id("order_0", f"writer-{n}", None)
    n += 1
    time.sleep(0.05)
rt.close()
print(n, flush=True)
"""


def bench_reader_stalls(
    app: QApplication, big: Path, work: Path, seconds: float
) -> tuple[float, float, int, int]:
    """Longest UI-thread gap in a read-only window on `big` while another process commits.

    The writer process starts a run every 50 ms on a copy of the big file, so
    the window refreshes its list and its per-state counts all the while.

    Returns:
        (longest gap in seconds, 99th percentile gap in seconds, refreshes seen,
        runs the writer started).

    """
    path = work / "big-copy.db"
    shutil.copyfile(big, path)
    settings = Settings(QSettings(str(work / "r.ini"), QSettings.Format.IniFormat))
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    window = MainWindow(settings)
    window.resize(1280, 800)
    window.show()
    gaps: list[float] = []
    refreshes: list[object] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(tick)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER_SCRIPT, str(path), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    writer.stdout.readline()  # "ready": the writer holds the file

    async def body() -> None:
        window.open_path(path, read_only=True)
        assert window.session is not None
        window.session.refreshed.connect(refreshes.append)
        await asyncio.sleep(0.2)
        timer.start()
        last[0] = time.perf_counter()
        await asyncio.sleep(seconds)
        timer.stop()
        window.close_session()
        await asyncio.sleep(0.2)

    loop.run_until_complete(body())
    started = int(writer.stdout.readline() or 0)
    writer.wait(timeout=30)
    window.close()
    loop.close()
    asyncio.set_event_loop(None)
    ordered = sorted(gaps)
    p99 = ordered[int(len(ordered) * 0.99)] if ordered else 0.0
    return (ordered[-1] if ordered else 0.0), p99, len(refreshes), started


def _verdict(value: float, budget: float) -> str:
    return "within budget" if value <= budget else "OVER budget"


def measure(
    runs: int = 1_000_000,
    events: int = 50_000,
    drive_runs: int = 40,
    drive_seconds: float = 10.0,
    big: Path | None = None,
    why: bool = False,
) -> list[tuple[str, str]]:
    """Run the four benchmarks; (name, result) rows stating budget and measured value."""
    app = make_application()
    app.setQuitOnLastWindowClosed(False)
    rows: list[tuple[str, str]] = []
    big = big or big_file_path(runs)
    made = time.perf_counter()
    built = make_big_file(big, runs)
    how = f"built in {time.perf_counter() - made:.1f} s" if built else "cached"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        opened = bench_open_list(app, big, work)
        rows.append(
            (
                f"open a file of {runs:,} runs to a painted run list, read-only "
                f"(best of 3; file {how})",
                f"{opened:.3f} s (budget {BUDGET_OPEN_S:.0f} s, {_verdict(opened, BUDGET_OPEN_S)})",
            )
        )
        drawn = bench_timeline(app, events)
        rows.append(
            (
                f"build and paint the timeline of a run with {events:,} events",
                f"{drawn:.3f} s (budget {BUDGET_TIMELINE_S:.0f} s, "
                f"{_verdict(drawn, BUDGET_TIMELINE_S)})",
            )
        )
        worst, ticks, p99, closed = bench_stalls(
            app, work, drive_runs, drive_seconds, why
        )
        rows.append(
            (
                f"longest UI-thread gap between 5 ms ticks while the writer serves "
                f"{drive_runs} demo runs for {drive_seconds:.0f} s ({closed} closed; "
                "rt.serve() on the qasync loop)",
                f"{worst * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms over {ticks:,} ticks (budget "
                f"{BUDGET_STALL_MS:.0f} ms, {_verdict(worst * 1000, BUDGET_STALL_MS)})",
            )
        )
        worst, p99, refreshes, started = bench_reader_stalls(
            app, big, work, drive_seconds
        )
        rows.append(
            (
                f"longest UI-thread gap in a read-only window on the {runs:,}-run file while "
                f"another process starts a run every 50 ms for {drive_seconds:.0f} s "
                f"({started} started, {refreshes} refreshes)",
                f"{worst * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms (budget "
                f"{BUDGET_STALL_MS:.0f} ms, {_verdict(worst * 1000, BUDGET_STALL_MS)})",
            )
        )
    return rows


def run() -> list[tuple[str, str]]:
    """Measure with the issue's sizes; return (name, result) rows for RESULTS.md."""
    return measure()


def main() -> None:
    """Command line: the same benchmarks with sizes of your choice."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--drive-runs", type=int, default=40)
    parser.add_argument("--drive-seconds", type=float, default=10.0)
    parser.add_argument(
        "--file", type=Path, help="where the big file is kept between runs"
    )
    parser.add_argument(
        "--why", action="store_true", help="print where the UI thread stalled"
    )
    args = parser.parse_args()
    rows = measure(
        args.runs, args.events, args.drive_runs, args.drive_seconds, args.file, args.why
    )
    for name, result in rows:
        print(f"{name}: {result}")


if __name__ == "__main__":
    main()
