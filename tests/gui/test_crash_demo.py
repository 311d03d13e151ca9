"""The crash-recovery demo end to end, offscreen, with a real SIGKILL of a real worker process."""

from __future__ import annotations

import asyncio
import signal
import time
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt

from harvest_engine import SqliteReader
from harvest_gui.demo.crash_workflows import read_marks
from harvest_gui.views.crash_demo import CrashDemoView
from tests.gui.helpers import async_wait_until

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_crash_demo_kills_the_worker_mid_activity_and_the_run_resumes(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    view = CrashDemoView(tmp_path / "demo", seconds=1.5, pause=0)
    qtbot.addWidget(view)
    view.show()
    result = qloop.run_until_complete(view.run())
    steps = [view.steps.item(i).text() for i in range(view.steps.count())]
    assert result.completed, steps
    assert result.killed_mid_activity
    assert result.stranded_seen
    assert result.worker_exit == -signal.SIGKILL
    # Completed steps did not run again; the killed one ran twice, in two processes.
    assert result.starts["prepare_order"] == [result.worker_pid]
    assert len(result.starts["pack_parcel"]) == 2
    assert result.starts["pack_parcel"][0] == result.worker_pid
    assert result.starts["pack_parcel"][1] != result.worker_pid
    assert len(result.starts["ship_order"]) == 1
    assert result.completions_in_history == {
        "prepare_order": 1,
        "pack_parcel": 1,
        "ship_order": 1,
    }
    marks = read_marks(view.marks)
    assert [m[2] for m in marks if m[1] == "pack_parcel"] == ["start", "start", "end"]
    # Each step is narrated in the window.
    assert len(steps) == 7
    assert "SIGKILL" in steps[3]
    assert "stranded task" in steps[4]
    assert "reopens the file as its writer" in steps[5]
    assert "prepare_order once" in steps[6]
    assert "pack_parcel twice" in steps[6]
    # The timeline shows the killed attempt and the re-run on the pack_parcel lane.
    tl = view.timeline.timeline
    lane = next(i for i, lane in enumerate(tl.lanes) if "pack_parcel" in lane.label)
    results = [bar.result for bar in tl.bars_in_lane(lane)]
    assert results == ["lost", "completed"]
    qloop.run_until_complete(view.aclose())
    with SqliteReader.open(view.db) as reader:
        assert reader.describe(result.exec_id).state == "COMPLETED"
        assert reader.pending_tasks(result.exec_id) == []


def test_a_paused_demo_holds_at_each_of_its_seven_stages_until_step(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    view = CrashDemoView(tmp_path / "demo", seconds=1.5, pause=0)
    qtbot.addWidget(view)
    view.show()
    assert view.speed.currentText() == "Normal speed"
    qtbot.mouseClick(view.pause_button, Qt.MouseButton.LeftButton)
    assert view.pause_button.text() == "&Continue"
    assert view.step_button.isEnabled()
    held: list[tuple[int, str]] = []
    # A busy machine: from stage 3 on, the window takes 0.3 s to read the task.
    read_task = view._task_status
    slow = False

    def slow_read(session: Any) -> str | None:
        if slow:
            time.sleep(0.3)
        return read_task(session)

    view._task_status = slow_read  # type: ignore[method-assign]

    async def body() -> None:
        nonlocal slow
        task = view.start()
        for stage in range(1, 7):
            await async_wait_until(lambda s=stage: view.steps.count() == s, 30)
            # Held: nothing moves on by itself. Stage 3 is held past the end of
            # pack_parcel's 1.5 s: its body would finish the moment it thawed.
            await asyncio.sleep(2.0 if stage == 3 else 1.0)
            held.append((view.steps.count(), view.stage_label.text()))
            slow = stage == 3
            qtbot.mouseClick(view.step_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 60)

    qloop.run_until_complete(body())
    assert held == [(s, f"Stage {s} of 7: paused, Step goes on") for s in range(1, 7)]
    assert view.steps.count() == 7
    # Over: no Continue or Step left with nothing to go on to.
    assert view.stage_label.text() == "Stage 7 of 7: done"
    assert view.pause_button.text() == "&Pause"
    assert not view.pause_button.isChecked()
    assert not view.step_button.isEnabled()
    # Held at stage 3 past the 1.5 s step and read slowly: the worker stayed
    # frozen into the kill, so the SIGKILL still came mid-activity and the
    # stranded task was seen.
    assert view.result.killed_mid_activity
    assert view.result.stranded_seen
    assert view.result.completed
    qloop.run_until_complete(view.aclose())


def test_the_speed_box_scales_the_rest_between_stages(
    qtbot: Any, tmp_path: Path
) -> None:
    view = CrashDemoView(tmp_path / "demo", pause=1.5)
    qtbot.addWidget(view)
    assert view.rest_seconds() == 1.5
    view.speed.setCurrentIndex(view.speed.findText("Fast: double speed"))
    assert view.rest_seconds() == 0.75
    view.speed.setCurrentIndex(view.speed.findText("Slow: half speed"))
    assert view.rest_seconds() == 3.0
