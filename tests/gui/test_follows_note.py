"""Each run form's note says what following the selection does to it, and it does just that."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import ExecutionFilter, Queue, SqliteRuntime, StartOptions
from harvest_gui.forms.bulk import BulkRunsDialog
from harvest_gui.forms.end_run import EndRunDialog
from harvest_gui.forms.fork import ForkDialog, activity_steps
from harvest_gui.forms.handler_call import QueryDialog
from harvest_gui.forms.reset import ResetDialog
from harvest_gui.forms.signal import SignalDialog
from harvest_gui.session import WriterSession
from tests.gui.helpers import make_runs, stamp, three_steps, waits_for_go

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.gui
FOLLOWS = (
    "Follows the run selected in the main window: selecting another run there "
    "points this form at it"
)


def test_each_form_says_what_a_new_selection_does_to_it(
    qtbot: Any, tmp_path: Path
) -> None:
    path = tmp_path / "runs.db"
    a, b = make_runs(path, 2, finish=1)
    session = WriterSession.open(path, "tests.gui.helpers")
    try:
        forms = {
            "cancel": EndRunDialog(session, b, "cancel"),
            "reset": ResetDialog(session, a, 2),
            "fork": ForkDialog(session, a, []),
            "signal": SignalDialog(session, b),
            "query": QueryDialog(session, b),
        }
        notes = {}
        for kind, form in forms.items():
            qtbot.addWidget(form)
            notes[kind] = form.follows.text()
        assert notes == {
            "cancel": FOLLOWS + " and clears its confirmation.",
            "reset": FOLLOWS
            + " (back to the default point) and clears its confirmation.",
            "fork": FOLLOWS + " and lists its steps.",  # no confirmation to clear
            "signal": FOLLOWS + " and suggests its signal names.",
            "query": FOLLOWS + " and offers its handler names.",
        }
        reset = forms["reset"]
        assert isinstance(reset, ResetDialog)
        reset.confirm.setChecked(True)
        reset.retarget(b)
        assert not reset.confirm.isChecked()
        assert reset.to_event.value() == 0  # event 2 was the other run's
        assert reset.to_event.text() == "the default point"
    finally:
        session.close()


def test_a_fork_form_pointed_at_another_run_lists_that_runs_steps(
    qtbot: Any, tmp_path: Path
) -> None:
    path = tmp_path / "runs.db"
    (waiting,) = make_runs(path, 1)
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(three_steps)
        rt.register_activity(stamp)
        steps = str(rt.start_workflow_with_id("three_steps", "wf-steps", None))
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_idle())
        finally:
            loop.close()
    session = WriterSession.open(path, "tests.gui.helpers")
    try:
        form = ForkDialog(
            session, waiting, activity_steps(session.load_history(waiting))
        )
        qtbot.addWidget(form)
        assert not form.submit_button.isEnabled()  # no step to fork from
        form.retarget(steps)
        assert form.run_line.text().startswith("wf-steps · three_steps")
        assert form.from_step.value() == 3
        assert form.step_label.text() == "step 3: stamp runs again; it keeps 2 step(s)"
        assert form.submit_button.isEnabled()
    finally:
        session.close()


def test_a_bulk_cancel_on_a_filter_of_several_states_counts_only_the_open_runs(
    qtbot: Any, tmp_path: Path
) -> None:
    path = tmp_path / "runs.db"
    make_runs(path, 3, finish=1)
    session = WriterSession.open(path, "tests.gui.helpers")
    try:
        flt = ExecutionFilter().state("RUNNING", "COMPLETED")
        form = BulkRunsDialog(session, flt, "cancel")
        qtbot.addWidget(form)
        assert form.headline.text().startswith("Cancel the 2 runs matching this filter")
        assert form.names.toPlainText().splitlines() == [
            "wf-00002 · waits_for_go",
            "wf-00001 · waits_for_go",
        ]
    finally:
        session.close()


def test_a_bulk_terminate_counts_the_runs_waiting_in_a_queue_the_engine_ends_too(
    qtbot: Any, tmp_path: Path
) -> None:
    """terminate_many ends ENQUEUED runs as well: the form must not promise fewer."""
    path = tmp_path / "queued.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(waits_for_go)
        rt.register_queue(Queue("emails", concurrency=1))
        for i in range(3):
            rt.start_workflow_with_options(
                "waits_for_go", i, StartOptions(queue="emails", workflow_id=f"q-{i}")
            )
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_idle())
        finally:
            loop.close()
    session = WriterSession.open(path, "tests.gui.helpers")
    try:
        flt = ExecutionFilter().workflow_id_prefix("q-")
        cancel = BulkRunsDialog(session, flt, "cancel")
        qtbot.addWidget(cancel)
        assert cancel.headline.text().startswith("Cancel the 1 run matching")
        form = BulkRunsDialog(session, flt, "terminate")
        qtbot.addWidget(form)
        assert form.headline.text().startswith("Terminate the 3 runs matching")
        form.confirm.setChecked(True)
        form.submit_button.click()
        assert form.result_view.toPlainText() == "Terminate: 3 runs changed."
    finally:
        session.close()
