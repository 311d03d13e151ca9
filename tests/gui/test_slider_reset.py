"""Reset… from the time-travel slider: offered at the events a reset may start from, at the slider's event.

Writer mode resets through the embedded runtime, client mode through the
serving process (`client.reset`); both open the reset form from the slider
in the real window and read its texts.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton

from harvest_engine import SqliteRuntime
from harvest_gui.client_session import ClientSession
from harvest_gui.forms.reset import ResetDialog
from harvest_gui.views.main_window import MainWindow
from harvest_gui.views.time_travel import TimeTravelView
from tests.gui.helpers import async_wait_until, make_runs, serving, stamp, three_steps

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui


@pytest.fixture
def window(qtbot: Any, settings: Any) -> Iterator[MainWindow]:
    w = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close_session()
    w.close()


def steps_run(path: Path) -> str:
    """A completed three_steps run: events 1 start, 2-7 three scheduled/completed pairs, 8 end."""
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(three_steps)
        rt.register_activity(stamp)
        exec_id = str(rt.start_workflow_with_id("three_steps", "wf-steps", None))
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_idle())
        finally:
            loop.close()
    return exec_id


def slider_of(window: MainWindow, exec_id: str) -> TimeTravelView:
    assert window.run_list is not None
    assert window.run_list.select_exec_id(exec_id)
    window.operations.on_time_travel()
    view = window.operations.opened.forms["time_travel"]
    assert isinstance(view, TimeTravelView)
    return view


def test_the_slider_offers_reset_only_at_a_decision_boundary_and_opens_the_form_there(
    qtbot: Any, window: MainWindow, tmp_path: Path
) -> None:
    path = tmp_path / "steps.db"
    exec_id = steps_run(path)
    assert window.open_path(path)
    view = slider_of(window, exec_id)
    # Named as the user knows the run, not by its exec id (issue 31 §8).
    assert view.windowTitle() == "Time travel — wf-steps · three_steps"
    window.operations.on_determinism()
    check = window.operations.opened.forms["determinism"]
    assert check.windowTitle() == "Determinism check — wf-steps · three_steps"
    check.close()
    assert view.slider.value() == 8
    # The keyboard is on the slider: ← steps back an event (found under Xvfb).
    assert view.focusWidget() is view.slider
    qtbot.keyClick(view.focusWidget(), Qt.Key.Key_Left)
    assert view.slider.value() == 7
    assert view.reset_button.isEnabled()
    qtbot.keyClick(view.focusWidget(), Qt.Key.Key_Right)
    assert not view.reset_button.isEnabled()  # the run's end
    assert view.reset_note.text() == (
        "A reset cannot start at event 8: it is the run's end; the nearest is event 7."
    )
    view.slider.setValue(4)  # the second stamp scheduled, not answered
    assert not view.reset_button.isEnabled()
    assert view.reset_note.text() == (
        "A reset cannot start at event 4: the run held an activity, timer, child or "
        "mutex open there; the nearest are events 3 and 5."
    )
    qtbot.keyClick(view.slider, Qt.Key.Key_Right)  # event 5: the second stamp answered
    assert view.slider.value() == 5
    assert view.reset_button.isEnabled()
    assert view.reset_note.text().startswith("A reset at event 5 keeps events 1..5")
    assert view.reset_button.text() == "&Reset to this event…"
    qtbot.mouseClick(view.reset_button, Qt.MouseButton.LeftButton)
    form = window.operations.opened.forms["reset"]
    assert isinstance(form, ResetDialog)
    assert form.to_event.value() == 5
    assert form.run_line.text().startswith("wf-steps · three_steps (COMPLETED")
    assert form.point_note.text().startswith("A reset at event 5 keeps events 1..5")
    assert form.confirm.text() == (
        "I understand wf-steps · three_steps starts again from event 5"
    )
    # The point came chosen: the keyboard is in the reason.
    assert form.focusWidget() is form.reason
    qtbot.keyClicks(form.reason, "replay the last step")
    assert form.reason.text() == "replay the last step"
    assert not form.submit_button.isEnabled()  # not confirmed yet
    qtbot.keyClick(form.reason, Qt.Key.Key_Return)  # Enter does not reset
    assert not form.result_view.toPlainText()
    form.confirm.setChecked(True)
    qtbot.mouseClick(form.submit_button, Qt.MouseButton.LeftButton)
    text = form.result_view.toPlainText()
    assert not form.error_label.text(), form.error_label.text()
    assert text.startswith("Reset wf-steps · three_steps (COMPLETED"), text
    assert " to event 5: the new run is " in text
    new_id = text.rsplit(" ", 1)[-1].rstrip(".")
    session = window.session
    assert session is not None
    assert str(session.describe(new_id).reset_from) == exec_id
    assert [e.type for e in session.load_history(new_id)][:5] == [
        "WorkflowStarted",
        "ActivityScheduled",
        "ActivityCompleted",
        "ActivityScheduled",
        "ActivityCompleted",
    ]


def test_the_reset_form_says_when_the_chosen_event_is_no_reset_point(
    qtbot: Any, window: MainWindow, tmp_path: Path
) -> None:
    path = tmp_path / "steps.db"
    exec_id = steps_run(path)
    assert window.open_path(path)
    form = ResetDialog(window.session, exec_id, 6)
    qtbot.addWidget(form)
    form.show()
    form.reason.setText("why")
    assert form.point_note.text().startswith("A reset cannot start at event 6")
    form.confirm.setChecked(True)
    assert not form.submit_button.isEnabled()  # refused before confirming, not after
    form.to_event.setValue(7)
    assert not form.confirm.isChecked()  # another point: confirm again
    form.confirm.setChecked(True)
    assert form.submit_button.isEnabled()
    form.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A run that took "go" and completed (events: start, signal, end), served by another process."""
    path = tmp_path / "served.db"
    (done,) = make_runs(path, 1, finish=1)
    with serving(path):
        yield path, done


def test_a_client_window_resets_from_the_slider_through_the_serving_process(
    qtbot: Any, qloop: Any, window: MainWindow, served: tuple[Path, str]
) -> None:
    path, exec_id = served
    assert not window.open_path(path)  # the server holds the lock
    box = window.last_dialog
    assert box is not None
    client_button = box.findChild(QPushButton, "openAsClient")
    assert client_button is not None
    client_button.click()
    session = window.session
    assert isinstance(session, ClientSession)
    view = slider_of(window, exec_id)
    view.slider.setValue(2)  # the "go" signal received
    assert view.reset_note.text().startswith("A reset at event 2 keeps events 1..2")
    view.reset_button.click()
    form = window.operations.opened.forms["reset"]
    assert isinstance(form, ResetDialog)
    assert form.submit_button.text() == "&Reset run"
    assert form.disabled_reason is None  # acts through the serving process
    assert form.confirm.text() == (
        "I understand wf-00000 · waits_for_go starts again from event 2"
    )

    async def body() -> None:
        form.reason.setText("again")
        form.confirm.setChecked(True)
        qtbot.mouseClick(form.submit_button, Qt.MouseButton.LeftButton)
        await async_wait_until(
            lambda: bool(form.result_view.toPlainText() or form.error_label.text()),
            10,
        )
        text = form.result_view.toPlainText()
        assert text.startswith("Reset wf-00000 · waits_for_go"), form.error_label.text()
        new_id = text.rsplit(" ", 1)[-1].rstrip(".")
        # The served process decides the new run: it replays "go" and completes again.
        await async_wait_until(
            lambda: session.describe(new_id).state == "COMPLETED", 10
        )
        assert str(session.describe(exec_id).reset_to) == new_id

    qloop.run_until_complete(body())
