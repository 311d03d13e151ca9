"""Forms offer what the code expects: typed signal fields, templates, no silent null (issue 17)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from harvest_engine import SqliteRuntime
from harvest_gui.demo.seed import DEMO_ORDERS, register
from harvest_gui.forms.handler_call import UpdateDialog
from harvest_gui.forms.signal import SignalDialog
from harvest_gui.forms.start import StartWorkflowDialog
from harvest_gui.inspect.signal_names import signal_types_in_code
from harvest_gui.session import WriterSession
from tests.gui.apps import typed_signals
from tests.gui.helpers import async_wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui


def click(qtbot: Any, button: Any) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_signal_types_are_read_from_the_code() -> None:
    types = signal_types_in_code(typed_signals.approval_flow)
    assert types == {"approve": typed_signals.Approval, "note": typed_signals.Note}


@pytest.fixture
def signals_file(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "signals.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(typed_signals.approval_flow)
        exec_id = str(rt.start_workflow_with_id("approval_flow", "flow-1", None))
    return path, exec_id


@pytest.fixture
def writer(signals_file: tuple[Path, str]) -> Iterator[WriterSession]:
    session = WriterSession.open(signals_file[0], "tests.gui.apps.typed_signals")
    yield session
    session.close()


def test_an_empty_signal_payload_is_not_sent_as_null(
    qtbot: Any, writer: WriterSession, signals_file: tuple[Path, str]
) -> None:
    dlg = SignalDialog(writer, signals_file[1])
    qtbot.addWidget(dlg)
    dlg.name.setCurrentText("go")
    assert dlg.payload.raw.toPlainText() == ""
    assert not dlg.submit_button.isEnabled()
    assert "null sends no value" in dlg.payload.status.text()
    dlg.payload.set_text("null")
    assert dlg.submit_button.isEnabled()  # typed out, null is a choice


def test_a_typed_signal_offers_its_fields_filled_with_the_defaults(
    qtbot: Any, writer: WriterSession, signals_file: tuple[Path, str]
) -> None:
    dlg = SignalDialog(writer, signals_file[1])
    qtbot.addWidget(dlg)
    dlg.name.setCurrentText("approve")
    assert set(dlg.payload.field_widgets) == {"approved", "by"}
    assert json.loads(dlg.payload.raw.toPlainText()) == {"approved": True, "by": "ops"}
    assert dlg.payload.status.text() == (
        "valid: Approval (a JSON object with its fields)"
    )
    assert dlg.submit_button.isEnabled()
    click(qtbot, dlg.submit_button)
    assert dlg.error_label.isHidden()
    staged = writer.staged_signals(signals_file[1])
    assert [(s.name, s.payload.value) for s in staged] == [
        ("approve", {"approved": True, "by": "ops"})
    ]
    dlg.name.setCurrentText("note")
    assert set(dlg.payload.field_widgets) == {"text"}


def test_the_last_received_payload_is_offered_as_a_template(
    qtbot: Any, qloop: Any, signals_file: tuple[Path, str]
) -> None:
    path, exec_id = signals_file
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(typed_signals.approval_flow)
        rt.send_signal(exec_id, "go", {"batch": 7})
        qloop.run_until_complete(rt.run_until_idle())
    session = WriterSession.open(path, "tests.gui.apps.typed_signals")
    try:
        dlg = SignalDialog(session, exec_id)
        qtbot.addWidget(dlg)
        dlg.name.setCurrentText("go")
        button = dlg.payload.template_button
        assert not button.isHidden()
        assert button.text() == "Fill in the payload of the last 'go' signal"
        click(qtbot, button)
        assert json.loads(dlg.payload.raw.toPlainText()) == {"batch": 7}
        assert dlg.submit_button.isEnabled()
    finally:
        session.close()


@pytest.fixture
def demo_writer(tmp_path: Path) -> Iterator[tuple[WriterSession, str]]:
    path = tmp_path / "demo.db"
    order = DEMO_ORDERS[0]
    with SqliteRuntime.open(path) as rt:
        register(rt)
        exec_id = str(rt.start_workflow_with_id("process_order", order["id"], order))
    session = WriterSession.open(path, "harvest_gui.demo.seed")
    yield session, exec_id
    session.close()


def test_the_start_form_offers_the_last_runs_input(
    qtbot: Any, demo_writer: tuple[WriterSession, str]
) -> None:
    session, _ = demo_writer
    dlg = StartWorkflowDialog(session)
    qtbot.addWidget(dlg)
    dlg.workflow.setCurrentText("process_order")
    button = dlg.input.template_button
    assert not button.isHidden()
    assert (
        button.text() == f"Fill in the input of the last run ({DEMO_ORDERS[0]['id']})"
    )
    click(qtbot, button)
    assert json.loads(dlg.input.raw.toPlainText()) == DEMO_ORDERS[0]
    assert dlg.input.status.text() == "valid: JSON object"
    dlg.workflow.setCurrentText("nightly_report")
    assert button.isHidden()  # no run of it yet


def test_the_demo_has_an_update_to_try_and_an_error_clears_the_old_answer(
    qtbot: Any, qloop: Any, demo_writer: tuple[WriterSession, str]
) -> None:
    session, exec_id = demo_writer
    dlg = UpdateDialog(session, exec_id)
    qtbot.addWidget(dlg)
    dlg.show()
    assert dlg.name.currentText() == "apply_discount"
    assert set(dlg.arg.field_widgets) == {"percent", "reason"}

    async def body() -> None:
        dlg.arg.field_widgets["percent"].setText("10")
        click(qtbot, dlg.submit_button)
        await async_wait_until(lambda: dlg.result_view.isVisible())
        assert json.loads(dlg.result_view.toPlainText()) == {
            "discount_percent": 10.0,
            "reason": "none",
        }
        dlg.arg.field_widgets["percent"].setText("80")
        click(qtbot, dlg.submit_button)
        await async_wait_until(lambda: dlg.error_label.isVisible())
        assert "at most 50 percent" in dlg.error_label.text()
        assert dlg.result_view.isHidden()  # the old answer does not stay under it

    qloop.run_until_complete(body())


def test_tab_goes_through_a_typed_signals_fields_in_order(
    qtbot: Any, writer: WriterSession, signals_file: tuple[Path, str]
) -> None:
    """Found under Xvfb: Tab from "Raw JSON" skipped the fields to the key."""
    dlg = SignalDialog(writer, signals_file[1])
    qtbot.addWidget(dlg)
    dlg.show()
    dlg.activateWindow()
    qtbot.waitUntil(dlg.isActiveWindow)
    dlg.name.setCurrentText("approve")
    qtbot.waitUntil(dlg.payload.field_widgets["by"].isVisible)  # shown by a queued call
    dlg.name.setFocus()
    order = []
    for _ in range(4):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        order.append(QApplication.focusWidget().objectName())
    assert order == [
        "signalPayloadRawToggle",
        "signalPayloadField_approved",
        "signalPayloadField_by",
        "signalKeyEdit",
    ]
    dlg.close()
