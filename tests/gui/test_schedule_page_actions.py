"""The Schedules page fires a schedule: Trigger now, Backfill… with its slots previewed, its recent runs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import QDateTime, Qt, QTimeZone

from harvest_engine import (
    Overlap,
    Schedule,
    SqliteRuntime,
    WorkflowSchedule,
)
from harvest_gui.client_session import ClientSession
from harvest_gui.session import WriterSession
from harvest_gui.views.schedules import SchedulesView
from tests.gui.helpers import async_wait_until, quick, serving

if TYPE_CHECKING:
    from collections.abc import Iterator

    from harvest_gui.session_base import Session

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]
HOURLY = WorkflowSchedule(
    "quick", Schedule.cron("0 * * * *"), input=5, overlap=Overlap.ALLOW_ALL
)


def runs(view: SchedulesView) -> list[list[str]]:
    m = view.runs_model
    return [
        [str(m.data(m.index(r, c))) for c in range(m.columnCount())]
        for r in range(m.rowCount())
    ]


def at(edit: Any, when: datetime) -> None:
    edit.setDateTime(
        QDateTime.fromSecsSinceEpoch(int(when.timestamp()), QTimeZone.utc())
    )


def page(qtbot: Any, session: Session) -> SchedulesView:
    view = SchedulesView(session)
    qtbot.addWidget(view)
    session.changed.connect(view.refresh)
    view.show()
    assert view.runs_caption.text() == "Select a schedule to see its runs."
    assert not view.trigger_button.isEnabled()
    view.table.selectRow(0)
    assert view.selected is not None
    assert view.selected.workflow_name == "quick"
    return view


def backfill(qtbot: Any, view: SchedulesView, *, check: bool = True) -> Any:
    """Open Backfill… for 01:00 to 03:00 on a day long past: three hourly slots."""
    qtbot.mouseClick(view.backfill_button, Qt.MouseButton.LeftButton)
    dialog = view.backfill_dialog
    assert dialog is not None
    qtbot.addWidget(dialog)
    # It opens on the latest ten slots (a day would be 24 of an hourly schedule).
    assert dialog.summary.text().startswith(("10 runs", "11 runs"))
    at(dialog.start_edit, datetime(2026, 1, 1, 1, tzinfo=UTC))
    at(dialog.end_edit, datetime(2026, 1, 1, 3, tzinfo=UTC))
    if not check:
        return dialog
    assert dialog.summary.text() == "3 runs (one per slot)"
    assert dialog.slots_view.toPlainText().splitlines() == [
        "2026-01-01 01:00:00 UTC",
        "2026-01-01 02:00:00 UTC",
        "2026-01-01 03:00:00 UTC",
    ]
    assert dialog.submit_button.text() == "&Start 3 runs"
    return dialog


def test_a_writer_window_triggers_and_backfills_a_schedule_and_lists_its_runs(
    qtbot: Any, tmp_path: Path
) -> None:
    session = WriterSession.open(tmp_path / "sched.db")
    rt = session.runtime
    rt.register_workflow(quick)
    rt.upsert_schedule(HOURLY)
    try:
        view = page(qtbot, session)
        assert view.runs_caption.text() == "Recent runs of quick's schedule: none yet"
        qtbot.mouseClick(view.trigger_button, Qt.MouseButton.LeftButton)
        assert view.action_note.text().startswith("Triggered quick: started run ")
        view.refresh()
        # A skip schedule with its one allowed run still running would start none: said.
        rt.upsert_schedule(replace(HOURLY, overlap=Overlap.SKIP))
        view.refresh()
        held = backfill(qtbot, view, check=False)
        assert held.summary.text() == (
            "3 runs (one per slot). None now: its overlap policy is skip and 1 of its "
            "runs (max active runs 1) are running, so it starts none until they end"
        )
        held.close()
        rt.upsert_schedule(HOURLY)
        view.refresh()
        (row,) = runs(view)
        assert row[0].startswith("sched:quick:")
        assert "trigger-" in row[0]
        dialog = backfill(qtbot, view)
        # Enter in a date field starts nothing: the slots are read, then the button
        # (found under Xvfb: "Start 3 runs" was the default button).
        assert not dialog.submit_button.isDefault()
        qtbot.keyClick(dialog.start_edit, Qt.Key.Key_Return)
        assert dialog.isVisible()
        assert not dialog.result_view.toPlainText()
        assert len(runs(view)) == 1
        qtbot.mouseClick(dialog.submit_button, Qt.MouseButton.LeftButton)
        assert dialog.result_view.toPlainText().startswith("Started 3 runs of quick:")
        # The same range again: every slot has its run, nothing would start.
        assert dialog.summary.text() == (
            "0 runs (one per slot); skipped, as they have a run: 3 slots"
        )
        assert not dialog.submit_button.isEnabled()
        view.refresh()
        assert len(runs(view)) == 4
        assert view.runs_caption.text() == (
            "Recent runs of quick's schedule: the latest 4, newest first "
            "(double-click to open one)"
        )
    finally:
        session.close()


@pytest.fixture
def served_schedule(tmp_path: Path) -> Iterator[Path]:
    """A file with the hourly schedule of `quick`, served by another process."""
    path = tmp_path / "served.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(quick)
        rt.upsert_schedule(HOURLY)
    with serving(path):
        yield path


def test_a_client_window_fires_a_schedule_through_the_serving_process(
    qtbot: Any, qloop: Any, served_schedule: Path
) -> None:
    session = ClientSession.open(served_schedule)
    try:
        view = page(qtbot, session)

        async def body() -> None:
            qtbot.mouseClick(view.trigger_button, Qt.MouseButton.LeftButton)
            assert view.action_note.text().endswith("sent to the serving process…")
            await async_wait_until(lambda: "started run" in view.action_note.text(), 10)
            await async_wait_until(lambda: len(runs(view)) == 1, 5)
            dialog = backfill(qtbot, view)
            qtbot.mouseClick(dialog.submit_button, Qt.MouseButton.LeftButton)
            await async_wait_until(lambda: bool(dialog.result_view.toPlainText()), 10)
            assert dialog.result_view.toPlainText().startswith(
                "Started 3 runs of quick:"
            )
            await async_wait_until(lambda: len(runs(view)) == 4, 5)

        qloop.run_until_complete(body())
    finally:
        session.close()
