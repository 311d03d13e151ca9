"""Forms clicked through against real files: what the file holds afterwards."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt

from harvest_engine import SqliteReader, SqliteRuntime, WorkflowIdReusePolicy
from harvest_gui.forms.end_run import EndRunDialog
from harvest_gui.forms.handler_call import QueryDialog, UpdateDialog
from harvest_gui.forms.signal import SignalDialog
from harvest_gui.forms.start import StartWorkflowDialog
from harvest_gui.session import ReaderSession, WriterSession
from tests.gui import form_app
from tests.gui.helpers import async_wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui
APP = "tests.gui.form_app"


@pytest.fixture
def form_file(tmp_path: Path) -> Path:
    """A file with one typed_order run waiting for "approve" and one plain run."""
    path = tmp_path / "forms.db"
    rt = SqliteRuntime.open(path)
    try:
        for wf in form_app.WORKFLOWS:
            rt.register_workflow(wf)
        rt.start_workflow_with_id("typed_order", "order-1", {"id": "A", "qty": 2})
        rt.start_workflow_with_id("plain", "plain-1", {"x": 1})
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_idle())
        finally:
            loop.close()
    finally:
        rt.close()
    return path


@pytest.fixture
def writer(form_file: Path) -> Iterator[WriterSession]:
    """The form file opened as its writer, the test app registered."""
    session = WriterSession.open(form_file, APP)
    yield session
    session.close()


def run_id(session: Any, workflow_id: str) -> str:
    """The exec id of the newest run of `workflow_id`."""
    from harvest_engine import ExecutionFilter

    page = session.list_executions(ExecutionFilter().workflow_id(workflow_id))
    return str(page.executions[0].exec_id)


def shown(qtbot: Any, dialog: Any) -> Any:
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


# -- start -------------------------------------------------------------------------------


def test_start_form_offers_one_field_per_dataclass_attribute_and_starts_the_run(
    qtbot: Any, writer: WriterSession, form_file: Path
) -> None:
    dlg = shown(qtbot, StartWorkflowDialog(writer))
    dlg.workflow.setCurrentText("typed_order")
    fields = dlg.input.field_widgets
    assert list(fields) == ["id", "qty", "unit_price", "gift", "tags"]
    assert dlg.input.field_mode
    qtbot.keyClicks(fields["id"], "B-7")
    fields["qty"].setText("")
    qtbot.keyClicks(fields["qty"], "5")
    fields["gift"].setChecked(True)
    fields["tags"].clear()
    qtbot.keyClicks(fields["tags"], '["red"]')
    qtbot.keyClicks(dlg.workflow_id, "order-2")
    dlg.memo.set_text('{"note": "rush"}')
    dlg.attributes.set_text('{"region": "eu"}')
    assert dlg.submit_button.isEnabled(), [
        e.status.text() for e in (dlg.input, dlg.memo, dlg.attributes)
    ]
    qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
    assert dlg.error_label.isHidden(), dlg.error_label.text()
    assert "Started a new run" in dlg.result_view.toPlainText()
    with SqliteReader.open(form_file) as reader:
        detail = reader.describe(run_id(writer, "order-2"))
    assert detail.workflow_name == "typed_order"
    assert detail.input.value == {
        "id": "B-7",
        "qty": 5,
        "unit_price": 1.0,
        "gift": True,
        "tags": ["red"],
    }
    assert detail.memo.value == {"note": "rush"}
    assert detail.search_attributes.value == {"region": "eu"}


def test_start_form_checks_the_typed_input_before_submit(
    qtbot: Any, writer: WriterSession
) -> None:
    dlg = shown(qtbot, StartWorkflowDialog(writer))
    dlg.workflow.setCurrentText("typed_order")
    dlg.input.field_widgets["qty"].setText("many")
    assert not dlg.submit_button.isEnabled()
    assert "qty must be a whole number" in dlg.input.status.text()
    dlg.input.field_widgets["qty"].setText("3")
    dlg.input.field_widgets["id"].setText("C")
    assert dlg.submit_button.isEnabled()
    dlg.input.raw_toggle.setChecked(True)  # raw JSON carries the field values across
    assert '"qty": 3' in dlg.input.raw.toPlainText()
    dlg.input.raw.setPlainText('{"id": "C", "qty": 3,')
    assert not dlg.submit_button.isEnabled()
    assert "not JSON: line 1" in dlg.input.status.text()
    dlg.input.raw.setPlainText('{"id": "C", "qty": 3, "colour": "red"}')
    assert "Order has no field 'colour'" in dlg.input.status.text()
    dlg.input.raw.setPlainText('{"qty": 3}')
    assert "Order.id is required" in dlg.input.status.text()
    dlg.attributes.set_text("[1, 2]")
    assert "must be a JSON object" in dlg.attributes.status.text()


def test_start_form_shows_a_refused_start_in_words_and_writes_nothing(
    qtbot: Any, writer: WriterSession, form_file: Path
) -> None:
    dlg = shown(qtbot, StartWorkflowDialog(writer))
    dlg.workflow.setCurrentText("plain")
    dlg.input.set_text('{"y": 2}')
    dlg.workflow_id.setText("plain-1")
    dlg.reuse.setCurrentIndex(
        dlg.reuse.findData(WorkflowIdReusePolicy.REJECT_DUPLICATE)
    )
    qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
    text = dlg.error_label.text()
    assert text.startswith("Workflow already started:"), text
    assert "Traceback" not in text
    with SqliteReader.open(form_file) as reader:
        from harvest_engine import ExecutionFilter

        runs = reader.list_executions(
            ExecutionFilter().workflow_id("plain-1")
        ).executions
    assert len(runs) == 1


def test_start_form_attaches_to_a_running_run_under_allow_duplicate(
    qtbot: Any, writer: WriterSession
) -> None:
    dlg = shown(qtbot, StartWorkflowDialog(writer))
    dlg.workflow.setCurrentText("plain")
    dlg.workflow_id.setText("plain-1")
    with qtbot.waitSignal(dlg.succeeded) as blocker:
        qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
    assert blocker.args[0].started_fresh is False
    assert "Attached to the running run" in dlg.result_view.toPlainText()


def test_forms_in_read_only_mode_are_disabled_with_the_reason(
    qtbot: Any, form_file: Path
) -> None:
    session = ReaderSession.open(form_file)
    try:
        exec_id = run_id(session, "order-1")
        for dlg in (
            StartWorkflowDialog(session),
            SignalDialog(session, exec_id),
            QueryDialog(session, exec_id),
            UpdateDialog(session, exec_id),
            EndRunDialog(session, exec_id, "cancel"),
            EndRunDialog(session, exec_id, "terminate"),
        ):
            shown(qtbot, dlg)
            assert not dlg.submit_button.isEnabled()
            assert dlg.notice.isVisible()
            assert dlg.notice.text().startswith("Read-only:")
    finally:
        session.close()


# -- signals -----------------------------------------------------------------------------


def test_signal_form_suggests_the_awaited_name_and_drops_a_repeated_key(
    qtbot: Any, writer: WriterSession, form_file: Path
) -> None:
    exec_id = run_id(writer, "order-1")
    dlg = shown(qtbot, SignalDialog(writer, exec_id))
    names = [dlg.name.itemText(i) for i in range(dlg.name.count())]
    assert names[0] == "approve"
    dlg.payload.set_text('"yes"')
    dlg.key.setText("webhook-1")
    qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
    assert "staged" in dlg.result_view.toPlainText()
    qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
    assert (
        "already received a signal with key 'webhook-1'"
        in dlg.result_view.toPlainText()
    )
    with SqliteReader.open(form_file) as reader:
        staged = reader.staged_signals(exec_id)
    assert [
        (s.name, s.payload.value if hasattr(s.payload, "value") else s.payload)
        for s in staged
    ] in ([("approve", "yes")],)


def test_signal_form_refuses_invalid_json(qtbot: Any, writer: WriterSession) -> None:
    dlg = shown(qtbot, SignalDialog(writer, run_id(writer, "order-1")))
    dlg.payload.set_text("{nope")
    assert not dlg.submit_button.isEnabled()
    dlg.name.setCurrentText("")
    dlg.payload.set_text("1")
    assert not dlg.submit_button.isEnabled()


# -- queries and updates (async: pattern A) ----------------------------------------------


def test_query_form_shows_the_answer_and_a_missing_handler_in_words(
    qtbot: Any, qloop: Any, writer: WriterSession
) -> None:
    exec_id = run_id(writer, "order-1")
    dlg = shown(qtbot, QueryDialog(writer, exec_id))
    assert dlg.name.findText("stage") >= 0

    async def body() -> None:
        dlg.name.setCurrentText("stage")
        qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
        await async_wait_until(lambda: dlg.result_view.isVisible())
        assert dlg.result_view.toPlainText() == '"waiting"'
        dlg.name.setCurrentText("nosuch")
        qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
        await async_wait_until(lambda: dlg.error_label.isVisible())

    qloop.run_until_complete(body())
    assert dlg.error_label.text().startswith("Query not found:")


def test_declarative_query_takes_its_argument(
    qtbot: Any, qloop: Any, writer: WriterSession
) -> None:
    dlg = shown(qtbot, QueryDialog(writer, run_id(writer, "plain-1")))
    dlg.name.setCurrentText("echo")
    dlg.arg.set_text('{"n": 4}')

    async def body() -> None:
        qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
        await async_wait_until(lambda: dlg.result_view.isVisible())

    qloop.run_until_complete(body())
    assert '"echo"' in dlg.result_view.toPlainText()
    assert '"n": 4' in dlg.result_view.toPlainText()


def test_update_form_records_the_update_and_shows_rejections_in_words(
    qtbot: Any, qloop: Any, writer: WriterSession, form_file: Path
) -> None:
    exec_id = run_id(writer, "order-1")
    dlg = shown(qtbot, UpdateDialog(writer, exec_id))
    assert dlg.name.findText("set_price") >= 0

    async def body() -> None:
        dlg.name.setCurrentText("set_price")
        dlg.arg.set_text("3.5")
        qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
        await async_wait_until(lambda: dlg.result_view.isVisible())
        assert dlg.result_view.toPlainText() == "7.0"
        dlg.arg.set_text("-1")
        qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
        await async_wait_until(lambda: dlg.error_label.isVisible())

    qloop.run_until_complete(body())
    assert dlg.error_label.text().startswith("Update rejected:")
    assert "positive number" in dlg.error_label.text()
    with SqliteReader.open(form_file) as reader:
        types = [e.type for e in reader.load_history(exec_id)]
    assert types.count("UpdateCompleted") == 1


def test_failing_update_handler_is_shown_as_update_failed(
    qtbot: Any, qloop: Any, writer: WriterSession
) -> None:
    dlg = shown(qtbot, UpdateDialog(writer, run_id(writer, "plain-1")))
    dlg.name.setCurrentText("boom")

    async def body() -> None:
        qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
        await async_wait_until(lambda: dlg.error_label.isVisible())

    qloop.run_until_complete(body())
    assert dlg.error_label.text().startswith("Update failed:")
    assert "boom refused" in dlg.error_label.text()


# -- cancel / terminate ------------------------------------------------------------------


@pytest.mark.parametrize("action", ["cancel", "terminate"])
def test_end_run_form_waits_for_the_confirmation(
    qtbot: Any, qloop: Any, writer: WriterSession, form_file: Path, action: str
) -> None:
    exec_id = run_id(writer, "plain-1")
    dlg = shown(qtbot, EndRunDialog(writer, exec_id, action))
    assert (
        dlg.notice.isHidden()
    )  # the engine's rt.cancel / rt.terminate are used for real
    dlg.reason.setText("tests say so")
    assert not dlg.submit_button.isEnabled()
    dlg.confirm.setChecked(True)
    qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
    assert dlg.error_label.isHidden(), dlg.error_label.text()
    done = "Cancel requested" if action == "cancel" else "Run terminated"
    assert (
        dlg.result_view.toPlainText()
        == f"{done}: plain-1 · plain (RUNNING; exec {exec_id})"
    )
    with SqliteReader.open(form_file) as reader:
        detail = reader.describe(exec_id)
        if action == "cancel":  # cooperative: stored until the next drive
            assert detail.state == "RUNNING"
            assert detail.cancel_requested == "tests say so"
    qloop.run_until_complete(writer.runtime.run_until_idle())
    with SqliteReader.open(form_file) as reader:
        detail = reader.describe(exec_id)
        ending = reader.load_history(exec_id)[-1]
    assert detail.state == ("CANCELLED" if action == "cancel" else "TERMINATED")
    assert (
        ending.type == "WorkflowCancelled"
    )  # both end on it; the run's state tells them apart
    assert "tests say so" in ending.to_json()
    assert not dlg.confirm.isChecked()  # each action needs its own confirmation
    if action == "terminate":  # the form saw the run close: it refuses up front
        assert not dlg.confirm.isEnabled()
        assert dlg.closed_note.text().startswith("This run is closed (TERMINATED)")
    else:  # closed by a drive the form did not see: the engine's refusal, in words
        dlg.confirm.setChecked(True)
        qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
        assert dlg.error_label.text().startswith("Workflow not running:")
        assert "Traceback" not in dlg.error_label.text()
    with SqliteReader.open(form_file) as reader:
        assert reader.describe(exec_id).state == detail.state  # the file is unchanged
