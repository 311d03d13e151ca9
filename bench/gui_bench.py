"""GUI benchmarks of issue 6: open a big file to a painted list, a 50k-event timeline, UI stalls.

    QT_QPA_PLATFORM=offscreen python -m bench.gui_bench [--runs N] [--events N] [--drive-runs N]

Budgets (issue 6): list painted in <= 1 s for 1,000,000 runs; a 50,000-event
timeline in <= 1 s; no UI-thread stall over 50 ms while the writer drives runs.
These are measurements printed for RESULTS.md, not timed tests.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from typing import TYPE_CHECKING

import qasync
from PySide6.QtCore import QSettings, QTimer

from harvest_engine import HistoryEvent, SqliteRuntime, WorkflowContext, workflow
from harvest_gui.app import DEMO_APP, make_application
from harvest_gui.demo.seed import DEMO_ORDERS, register
from harvest_gui.settings import Settings
from harvest_gui.views.main_window import MainWindow
from harvest_gui.views.timeline_view import TimelineView

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication


@workflow
async def bench_noop(ctx: WorkflowContext, arg: object) -> object:
    """A run that only needs to exist in the list."""
    return arg


def make_big_file(path: Path, runs: int) -> None:
    """Start `runs` runs (never driven) through the public API; slow, so the file is kept."""
    rt = SqliteRuntime.open(path)
    try:
        rt.register_workflow(bench_noop)
        have = rt.counts_by_state().get("RUNNING", 0)
        for i in range(have, runs):
            rt.start_workflow_with_id("bench_noop", f"bench-{i:08d}", None)
    finally:
        rt.close()


def bench_open_list(app: QApplication, path: Path, work: Path) -> float:
    """Seconds from opening the file to the run list painted."""
    settings = Settings(QSettings(str(work / "s.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings)
    window.resize(1280, 800)
    window.show()
    app.processEvents()
    started = time.perf_counter()
    window.open_path(path, read_only=True)
    assert window.run_list is not None
    window.run_list.table.viewport().grab()  # forces a paint of the visible rows
    elapsed = time.perf_counter() - started
    window.close()
    return elapsed


def synthetic_history(events: int) -> list[HistoryEvent]:
    """A history of `events` events: activities, a timer and signals."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    out = [HistoryEvent(1, "WorkflowStarted", t0, {"workflow_name": "big", "attempt": 1})]
    i = 0
    while len(out) < events - 1:
        at = t0 + timedelta(seconds=i)
        seq = len(out) + 1
        if i % 50 == 0:
            out.append(HistoryEvent(seq, "SignalReceived", at, {"name": "tick", "payload": i}))
        else:
            name = f"step_{i % 9}"
            out.append(HistoryEvent(seq, "ActivityScheduled", at, {"activity_id": i, "name": name}))
            out.append(
                HistoryEvent(
                    seq + 1,
                    "ActivityCompleted",
                    at + timedelta(seconds=0.6),
                    {"activity_id": i, "name": name, "attempt": 1, "result": i},
                )
            )
        i += 1
    out.append(HistoryEvent(len(out) + 1, "WorkflowCompleted", t0 + timedelta(seconds=i), {}))
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


def bench_stalls(app: QApplication, work: Path, runs: int, seconds: float) -> tuple[float, int]:
    """Longest gap between 5 ms ticks on the UI thread while the writer drives demo runs."""
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
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(tick)

    async def body() -> None:
        window.open_path(path)
        timer.start()
        last[0] = time.perf_counter()
        await asyncio.sleep(seconds)
        timer.stop()
        window.close_session()
        await asyncio.sleep(0.5)

    loop.run_until_complete(body())
    window.close()
    loop.close()
    asyncio.set_event_loop(None)
    return max(gaps) if gaps else 0.0, len(gaps)


def main() -> None:
    """Run the three benchmarks and print their results."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--drive-runs", type=int, default=60)
    parser.add_argument("--drive-seconds", type=float, default=10.0)
    parser.add_argument("--file", type=Path, help="where the big file is kept between runs")
    args = parser.parse_args()
    app = make_application()
    app.setQuitOnLastWindowClosed(False)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        big = args.file or Path(tempfile.gettempdir()) / f"harvest-gui-bench-{args.runs}.db"
        made = time.perf_counter()
        make_big_file(big, args.runs)
        print(f"big file: {args.runs:,} runs at {big} ({time.perf_counter() - made:.1f} s to make)")
        print(f"open to painted list ({args.runs:,} runs): {bench_open_list(app, big, work):.3f} s")
        print(f"timeline of {args.events:,} events: {bench_timeline(app, args.events):.3f} s")
        worst, ticks = bench_stalls(app, work, args.drive_runs, args.drive_seconds)
        print(
            f"longest UI-thread gap while driving {args.drive_runs} demo runs: "
            f"{worst * 1000:.1f} ms over {ticks} ticks of 5 ms"
        )


if __name__ == "__main__":
    main()
