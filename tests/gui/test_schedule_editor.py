"""The schedule editor and the purge form, clicked through against real files."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt

from harvest_engine import Overlap, SqliteReader
from harvest_gui.forms.purge import PurgeDialog
from harvest_gui.forms.schedule_editor import ScheduleEditorDialog
from harvest_gui.session import ReaderSession, WriterSession
from tests.gui.history_app import make_steps_file

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui


@pytest.fixture
def path(tmp_path: Path) -> Path:
    p = tmp_path / "sched.db"
    make_steps_file(p)
    return p


@pytest.fixture
def writer(path: Path) -> Iterator[WriterSession]:
    session = WriterSession.open(path, "tests.gui.apps.steps_v1")
    yield session
    session.close()


def schedules(path: Path) -> dict[str, Any]:
    with SqliteReader.open(path) as reader:
        return {row.workflow_name: row for row in reader.list_schedules()}


def click(qtbot: Any, button: Any) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_editor_validates_as_you_type_and_previews_five_fires(
    qtbot: Any, writer: WriterSession
) -> None:
    dlg = ScheduleEditorDialog(writer)
    qtbot.addWidget(dlg)
    dlg.show()
    dlg.now = lambda: datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC)
    assert dlg.input.status.text() == "input must not be null"  # steps takes an int
    dlg.input.set_text("4")
    dlg.interval.setText("15m")
    assert dlg.preview.count() == 5
    assert dlg.submit_button.isEnabled()
    assert dlg.spec_status.text() == "valid: every 15m"
    dlg.interval.setText("1.5s")
    assert dlg.preview.count() == 0
    assert not dlg.submit_button.isEnabled()
    assert "whole number of seconds" in dlg.spec_status.text()
    dlg.cron_radio.setChecked(True)
    assert dlg.cron.isEnabled()
    assert not dlg.interval.isEnabled()
    qtbot.keyClicks(dlg.cron, "0 3 * *")
    assert "five fields" in dlg.spec_status.text()
    qtbot.keyClicks(dlg.cron, " *")
    assert dlg.spec_status.text() == "valid: cron 0 3 * * *"
    assert "2026-01-02 03:00:00 UTC" in dlg.preview.item(0).text()
    dlg.timezone.setText("Nowhere/Land")
    assert not dlg.submit_button.isEnabled()


def test_editor_saves_pauses_resumes_and_deletes(
    qtbot: Any, writer: WriterSession, path: Path
) -> None:
    dlg = ScheduleEditorDialog(writer)
    qtbot.addWidget(dlg)
    dlg.show()
    assert not dlg.pause_button.isEnabled()
    assert not dlg.delete_button.isEnabled()
    dlg.cron_radio.setChecked(True)
    dlg.cron.setText("*/5 * * * *")
    dlg.input.set_text("7")
    dlg.overlap.setCurrentIndex(dlg.overlap.findData(Overlap.ALLOW_ALL))
    dlg.max_active.setValue(3)
    click(qtbot, dlg.submit_button)
    assert dlg.error_label.isHidden(), dlg.error_label.text()
    row = schedules(path)["steps"]
    assert row.schedule.cron_expression == "*/5 * * * *"
    assert row.input.value == 7
    assert str(row.overlap) == "allow_all"
    assert row.max_active_runs == 3
    assert dlg.state_label.text().startswith("active, next fire")
    click(qtbot, dlg.pause_button)
    assert schedules(path)["steps"].paused
    assert dlg.state_label.text() == "paused"
    assert dlg.resume_button.isEnabled()
    assert not dlg.pause_button.isEnabled()
    click(qtbot, dlg.resume_button)
    assert not schedules(path)["steps"].paused
    # Editing the stored schedule: change it to an interval.
    again = ScheduleEditorDialog(writer, schedules(path)["steps"])
    qtbot.addWidget(again)
    again.show()
    assert again.cron.text() == "*/5 * * * *"
    assert again.max_active.value() == 3
    again.interval_radio.setChecked(True)
    again.interval.setText("2h")
    click(qtbot, again.submit_button)
    assert schedules(path)["steps"].schedule.interval.total_seconds() == 7200
    click(qtbot, again.delete_button)
    assert "steps" in schedules(path)  # the first click only asks
    assert again.confirm_delete.isVisible()
    click(qtbot, again.confirm_delete)
    assert schedules(path) == {}
    assert "Deleted the schedule of steps" in again.result_view.toPlainText()


def test_editor_and_purge_are_disabled_read_only(qtbot: Any, path: Path) -> None:
    session = ReaderSession.open(path)
    try:
        for dlg in (ScheduleEditorDialog(session), PurgeDialog(session)):
            qtbot.addWidget(dlg)
            dlg.show()
            assert not dlg.submit_button.isEnabled()
            assert dlg.notice.text().startswith("Read-only:")
    finally:
        session.close()


def test_purge_counts_first_then_removes_the_finished_runs(
    qtbot: Any, writer: WriterSession, path: Path
) -> None:
    dlg = PurgeDialog(writer)
    qtbot.addWidget(dlg)
    dlg.show()
    assert dlg.preview.text() == "0 finished runs"
    dlg.amount.setValue(0)
    assert dlg.preview.text() == "2 finished runs"
    assert not dlg.submit_button.isEnabled()
    dlg.confirm.setChecked(True)
    with qtbot.waitSignal(dlg.succeeded) as blocker:
        click(qtbot, dlg.submit_button)
    assert blocker.args == [2]
    assert dlg.result_view.toPlainText() == "Purged 2 finished runs."
    with SqliteReader.open(path) as reader:
        counts = {k: v for k, v in reader.counts_by_state().items() if v}
    assert counts == {"RUNNING": 1}


def test_a_zone_typed_letter_by_letter_is_checked_without_an_error_box(
    qtbot: Any, writer: WriterSession
) -> None:
    dlg = ScheduleEditorDialog(writer)
    qtbot.addWidget(dlg)
    dlg.show()
    dlg.cron_radio.setChecked(True)
    dlg.cron.setText("0 3 * * *")
    dlg.timezone.clear()
    qtbot.keyClicks(dlg.timezone, "Europe")
    assert "unknown time zone 'Europe'" in dlg.spec_status.text()
    assert (
        "Europe/Paris" in dlg.spec_status.text()
    )  # the hint says what a zone looks like
    assert not dlg.submit_button.isEnabled()
    qtbot.keyClicks(dlg.timezone, "/Paris")
    assert dlg.timezone.text() == "Europe/Paris"  # the typing was not cut off
    assert dlg.spec_status.text() == "valid: cron 0 3 * * * (Europe/Paris)"


def test_fire_previews_are_in_the_schedules_zone_and_all_five_show(
    qtbot: Any, writer: WriterSession
) -> None:
    dlg = ScheduleEditorDialog(writer)
    qtbot.addWidget(dlg)
    dlg.show()
    dlg.now = lambda: datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC)
    dlg.cron_radio.setChecked(True)
    dlg.timezone.setText("Europe/Paris")
    dlg.cron.setText("0 3 * * *")
    first = dlg.preview.item(0).text()
    assert first == "2026-01-02 03:00 Europe/Paris (02:00 UTC)"
    fifth = dlg.preview.visualItemRect(dlg.preview.item(4))
    assert fifth.bottom() <= dlg.preview.viewport().height()


def test_new_schedule_is_titled_new_and_warns_before_replacing_one(
    qtbot: Any, writer: WriterSession, path: Path
) -> None:
    first = ScheduleEditorDialog(writer)
    qtbot.addWidget(first)
    assert first.windowTitle() == "New schedule"
    assert first.replace_note.isHidden()
    first.input.set_text("4")
    first.interval.setText("15m")
    click(qtbot, first.submit_button)
    assert first.windowTitle().startswith("Edit schedule")
    second = ScheduleEditorDialog(writer)
    qtbot.addWidget(second)
    second.show()
    name = second.workflow.currentText()
    assert name in schedules(path)
    assert second.replace_note.isVisible()
    assert "already has a schedule (every 15m)" in second.replace_note.text()
    assert "replaces it" in second.replace_note.text()
    assert second.submit_button.text() == "&Replace"


def test_the_overlap_choice_is_short_and_explained_below_it(
    qtbot: Any, writer: WriterSession
) -> None:
    dlg = ScheduleEditorDialog(writer)
    qtbot.addWidget(dlg)
    dlg.show()
    qtbot.waitExposed(dlg)
    assert dlg.overlap.currentText() == "skip"
    assert dlg.overlap.width() >= dlg.overlap.sizeHint().width()
    assert "max active runs" in dlg.overlap_help.text()
    dlg.overlap.setCurrentIndex(dlg.overlap.findData(Overlap.ALLOW_ALL))
    assert dlg.overlap_help.text() == "start a run for every slot"


def test_the_editor_never_grows_past_its_screen_when_results_appear(
    qtbot: Any, writer: WriterSession
) -> None:
    dlg = ScheduleEditorDialog(writer)
    qtbot.addWidget(dlg)
    dlg.show()
    dlg.cron_radio.setChecked(True)
    dlg.cron.setText("*/5 * * * *")
    dlg.input.set_text("7")
    click(qtbot, dlg.submit_button)
    click(qtbot, dlg.pause_button)
    dlg.show_result("\n".join(f"line {i}" for i in range(40)))
    screen = dlg.screen().availableGeometry()
    assert dlg.frameGeometry().height() <= screen.height()
    assert dlg.result_view.isVisible()
    assert dlg.result_view.height() >= dlg.result_view.fontMetrics().height()


def test_a_dialog_that_grows_near_the_bottom_moves_up_to_keep_its_buttons(
    qtbot: Any, writer: WriterSession
) -> None:
    dlg = ScheduleEditorDialog(writer)
    qtbot.addWidget(dlg)
    dlg.show()
    free = dlg.screen().availableGeometry()
    dlg.move(free.left(), free.bottom() - dlg.frameGeometry().height())  # at the bottom
    dlg.show_result("\n".join(f"line {i}" for i in range(40)))
    assert dlg.frameGeometry().bottom() <= free.bottom()
    assert dlg.frameGeometry().top() >= free.top()
