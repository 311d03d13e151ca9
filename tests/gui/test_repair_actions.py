"""Pause / Unpause a run and act on every run the list's filter matches, named and counted first.

Writer mode acts on the embedded runtime; client mode through the serving
process (`client.pause`, `client.cancel_many`, ...).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt

from harvest_engine import ExecutionFilter, SqliteRuntime
from harvest_gui.client_session import ClientSession
from harvest_gui.forms.bulk import BulkRunsDialog
from harvest_gui.forms.end_run import EndRunDialog
from harvest_gui.forms.fork import ForkDialog
from harvest_gui.forms.reset import ResetDialog
from harvest_gui.session import WriterSession
from harvest_gui.views.main_window import MainWindow
from harvest_gui.views.run_detail import RunDetailView
from harvest_gui.views.run_list import RunListView
from tests.gui.helpers import async_wait_until, make_runs, serving, stamp, three_steps

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]
WF = ExecutionFilter().workflow_id_prefix("wf-")


def shown(qtbot: Any, dialog: Any) -> Any:
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def test_a_writer_window_pauses_unpauses_and_cancels_the_filtered_runs(
    qtbot: Any, tmp_path: Path
) -> None:
    path = tmp_path / "runs.db"
    ids = make_runs(path, 3)
    session = WriterSession.open(path, "tests.gui.helpers")
    try:
        pause = shown(qtbot, EndRunDialog(session, ids[0], "pause"))
        pause.reason.setText("maintenance")
        assert not pause.submit_button.isEnabled()  # confirmation first
        pause.confirm.setChecked(True)
        qtbot.mouseClick(pause.submit_button, Qt.MouseButton.LeftButton)
        assert pause.result_view.toPlainText().startswith(
            "Run paused: wf-00000 · waits_for_go"
        )
        assert session.describe(ids[0]).paused
        # The Summary and the PAUSED filter box say so.
        detail = RunDetailView(session)
        qtbot.addWidget(detail)
        detail.show_run(ids[0])
        assert detail.summary.labels["state"].text() == "RUNNING · paused: maintenance"
        runs = RunListView(session)
        qtbot.addWidget(runs)
        runs.show_counts(session.counts_by_state())
        assert runs.paused_box.text() == "PAUSED 1"
        runs.paused_box.setChecked(True)
        assert [r.workflow_id for r in runs.model.rows] == ["wf-00000"]
        unpause = shown(qtbot, EndRunDialog(session, ids[0], "unpause"))
        assert not unpause.reason.isVisibleTo(unpause)  # an unpause records no reason
        unpause.confirm.setChecked(True)
        qtbot.mouseClick(unpause.submit_button, Qt.MouseButton.LeftButton)
        assert unpause.result_view.toPlainText().startswith("Run unpaused: wf-00000")
        assert not session.describe(ids[0]).paused

        bulk = shown(qtbot, BulkRunsDialog(session, WF, "cancel"))
        assert bulk.headline.text() == (
            "Cancel the 3 runs matching this filter: each is asked to stop and ends "
            "CANCELLED after its clean-up."
        )
        assert bulk.names.toPlainText().splitlines() == [
            "wf-00002 · waits_for_go",
            "wf-00001 · waits_for_go",
            "wf-00000 · waits_for_go",
        ]
        assert bulk.submit_button.text() == "&Cancel 3 runs"
        # Destructive: never the default button, and Enter in the reason does nothing.
        assert not bulk.submit_button.isDefault()
        assert not bulk.submit_button.autoDefault()
        bulk.reason.setFocus()
        bulk.reason.setText("shutting the shop")
        bulk.confirm.setChecked(True)
        qtbot.keyClick(bulk.reason, Qt.Key.Key_Return)
        assert bulk.isVisible()
        assert not bulk.result_view.toPlainText()
        assert all(not session.describe(e).cancel_requested for e in ids)
        qtbot.mouseClick(bulk.submit_button, Qt.MouseButton.LeftButton)
        assert bulk.result_view.toPlainText() == "Cancel: 3 runs changed."
        assert all(session.describe(e).cancel_requested for e in ids)
    finally:
        session.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, list[str]]]:
    """Three runs waiting for "go", served by another process."""
    path = tmp_path / "served.db"
    ids = make_runs(path, 3)
    with serving(path):
        yield path, ids


def test_a_client_window_pauses_the_filtered_runs_and_unpauses_one_through_the_server(
    qtbot: Any, qloop: Any, served: tuple[Path, list[str]]
) -> None:
    path, ids = served
    session = ClientSession.open(path)
    try:
        bulk = shown(qtbot, BulkRunsDialog(session, WF, "pause"))
        assert bulk.headline.text().startswith("Pause the 3 runs matching this filter")
        assert bulk.submit_button.text() == "&Pause 3 runs"

        async def body() -> None:
            bulk.confirm.setChecked(True)
            qtbot.mouseClick(bulk.submit_button, Qt.MouseButton.LeftButton)
            await async_wait_until(lambda: bool(bulk.result_view.toPlainText()), 10)
            assert bulk.result_view.toPlainText() == "Pause: 3 runs changed."
            assert all(session.describe(e).paused for e in ids)
            unpause = shown(qtbot, EndRunDialog(session, ids[1], "unpause"))
            unpause.confirm.setChecked(True)
            qtbot.mouseClick(unpause.submit_button, Qt.MouseButton.LeftButton)
            await async_wait_until(lambda: bool(unpause.result_view.toPlainText()), 10)
            assert unpause.result_view.toPlainText().startswith(
                "Run unpaused: wf-00001"
            )
            assert [session.describe(e).paused for e in ids] == [True, False, True]

        qloop.run_until_complete(body())
    finally:
        session.close()


def test_reset_opens_at_the_event_selected_in_history_and_starts_the_run_again(
    qtbot: Any, settings: Any, tmp_path: Path
) -> None:
    path = tmp_path / "runs.db"
    (exec_id,) = make_runs(path, 1, finish=1)  # decided: it took "go" and completed
    window = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(window)
    window.show()
    try:
        assert window.open_path(path)
        assert window.run_list is not None
        assert window.detail is not None
        assert window.run_list.select_exec_id(exec_id)
        seqs = [e.seq for e in window.detail.history.model.records]
        assert window.detail.open_event(seqs[-1]), seqs
        window.operations.on_reset()
        form = window.operations.opened.forms["reset"]
        assert isinstance(form, ResetDialog)
        assert form.to_event.value() == seqs[-1]
        assert form.run_line.text().startswith("wf-00000 · waits_for_go")
        assert not form.submit_button.isDefault()
        form.to_event.setValue(0)  # the default point
        assert form.to_event.text() == "the default point"
        form.reason.setText("new code")
        assert not form.submit_button.isEnabled()  # confirmation first
        form.confirm.setChecked(True)
        qtbot.mouseClick(form.submit_button, Qt.MouseButton.LeftButton)
        text = form.result_view.toPlainText()
        assert not form.error_label.text(), form.error_label.text()
        assert text.startswith("Reset wf-00000 · waits_for_go"), text
        assert "to the default point: the new run is " in text
        session = window.session
        assert session is not None
        assert (
            session.describe(exec_id).state == "COMPLETED"
        )  # a closed run stays as it was
        new_id = text.rsplit(" ", 1)[-1].rstrip(".")
        assert session.describe(new_id).workflow_id == "wf-00000"
    finally:
        window.close_session()


def test_fork_names_the_steps_and_starts_a_run_that_keeps_the_earlier_ones(
    qtbot: Any, settings: Any, tmp_path: Path
) -> None:
    path = tmp_path / "runs.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(three_steps)
        rt.register_activity(stamp)
        exec_id = str(rt.start_workflow_with_id("three_steps", "wf-steps", None))
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_idle())
        finally:
            loop.close()
    window = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(window)
    window.show()
    try:
        assert window.open_path(path)
        assert window.run_list is not None
        assert window.run_list.select_exec_id(exec_id)
        window.operations.on_fork()
        form = window.operations.opened.forms["fork"]
        assert isinstance(form, ForkDialog)
        assert form.run_line.text().startswith("wf-steps · three_steps")
        assert not form.submit_button.isDefault()
        assert form.from_step.value() == 3
        form.from_step.setValue(2)
        assert form.step_label.text() == "step 2: stamp runs again; it keeps 1 step(s)"
        form.workflow_id.setText("wf-forked")
        qtbot.mouseClick(form.submit_button, Qt.MouseButton.LeftButton)
        text = form.result_view.toPlainText()
        assert not form.error_label.text(), form.error_label.text()
        assert text.startswith("Forked wf-steps · three_steps"), text
        assert "from step 2: the new run is " in text
        new_id = text.rsplit(" ", 1)[-1].rstrip(".")
        session = window.session
        assert session is not None
        forked = session.describe(new_id)
        assert (forked.workflow_id, str(forked.forked_from)) == ("wf-forked", exec_id)
        assert session.describe(exec_id).state == "COMPLETED"  # the source is untouched
    finally:
        window.close_session()
