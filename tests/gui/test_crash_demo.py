"""The crash-recovery demo end to end, offscreen, with a real SIGKILL of a real worker process."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import SqliteReader
from harvest_gui.demo.crash_workflows import read_marks
from harvest_gui.views.crash_demo import CrashDemoView

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
