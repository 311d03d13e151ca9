"""Signal and reset every run the list's filter matches: counted and named first, confirmed, then done.

Writer mode calls `rt.signal_many` / `rt.reset_many`; client mode sends
`client.signal_many` / `client.reset_many` to the serving process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt

from harvest_engine import ExecutionFilter
from harvest_gui.client_session import ClientSession
from harvest_gui.forms.bulk import BulkRunsDialog
from harvest_gui.forms.bulk_signal import BulkSignalDialog
from harvest_gui.views.main_window import MainWindow
from tests.gui.helpers import async_wait_until, make_runs, serving

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui
WF = ExecutionFilter().workflow_id_prefix("wf-")


def shown(qtbot: Any, dialog: Any) -> Any:
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def test_the_window_signals_then_resets_the_filtered_runs_named_and_counted(
    qtbot: Any, settings: Any, tmp_path: Path
) -> None:
    path = tmp_path / "runs.db"
    ids = make_runs(path, 4, finish=1)  # wf-00000 completed, three wait for "go"
    window = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(window)
    window.show()
    try:
        assert window.open_path(path)
        session = window.session
        assert session is not None
        window.operations.actions["signal_many"].trigger()
        form = window.operations.opened.forms["signal_many"]
        assert isinstance(form, BulkSignalDialog)
        assert form.windowTitle() == "Signal the runs matching the filter"
        assert form.headline.text() == (
            "Signal the 3 runs matching this filter: each takes the signal once "
            "(sending the same signal again stages nothing twice)."
        )
        assert form.names.toPlainText().splitlines() == [
            "wf-00003 · waits_for_go",
            "wf-00002 · waits_for_go",
            "wf-00001 · waits_for_go",
        ]
        assert form.name.currentText() == "go"  # what the runs' code waits on
        assert form.focusWidget() is form.name  # the first field
        assert form.submit_button.text() == "&Signal 3 runs"
        assert not form.submit_button.isDefault()
        form.payload.set_text('"from the bulk form"')
        assert not form.submit_button.isEnabled()  # confirmation first
        form.confirm.setChecked(True)
        qtbot.mouseClick(form.submit_button, Qt.MouseButton.LeftButton)
        assert not form.error_label.text(), form.error_label.text()
        assert form.result_view.toPlainText() == "Signal 'go': 3 runs took it."
        assert [len(session.staged_signals(e)) for e in ids] == [0, 1, 1, 1]
        # The same signal again stages nothing twice.
        form.confirm.setChecked(True)
        qtbot.mouseClick(form.submit_button, Qt.MouseButton.LeftButton)
        assert form.result_view.toPlainText() == "Signal 'go': 0 runs took it."
        assert [len(session.staged_signals(e)) for e in ids] == [0, 1, 1, 1]
        form.close()

        window.operations.actions["reset_many"].trigger()
        reset = window.operations.opened.forms["reset_many"]
        assert isinstance(reset, BulkRunsDialog)
        # Only wf-00000 took a decision: the waiting runs have nothing to go back to.
        assert reset.headline.text().startswith(
            "Reset the 1 run matching this filter: each starts again from its default "
            "point"
        )
        assert reset.names.toPlainText() == "wf-00000 · waits_for_go (COMPLETED)"
        assert reset.submit_button.text() == "&Reset 1 run"
        # Found under Xvfb: it read "on these 1 run".
        assert reset.confirm.text() == "I understand this acts on this 1 run"
        reset.reason.setText("new code")
        reset.confirm.setChecked(True)
        qtbot.mouseClick(reset.submit_button, Qt.MouseButton.LeftButton)
        assert not reset.error_label.text(), reset.error_label.text()
        assert reset.result_view.toPlainText() == "Reset: 1 run changed."
        assert session.describe(ids[0]).reset_to is not None
        reset.close()
    finally:
        window.close_session()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, list[str]]]:
    """wf-00000 completed, wf-00001 and wf-00002 waiting for "go", served by another process."""
    path = tmp_path / "served.db"
    ids = make_runs(path, 3, finish=1)
    with serving(path):
        yield path, ids


def test_a_client_window_signals_and_resets_the_filtered_runs_through_the_server(
    qtbot: Any, qloop: Any, served: tuple[Path, list[str]]
) -> None:
    path, ids = served
    session = ClientSession.open(path)
    try:
        signal = shown(qtbot, BulkSignalDialog(session, WF))
        assert signal.disabled_reason is None  # goes through the serving process
        assert signal.headline.text().startswith(
            "Signal the 2 runs matching this filter"
        )

        async def body() -> None:
            signal.name.setCurrentText("go")
            signal.payload.set_text('"bulk"')
            signal.confirm.setChecked(True)
            qtbot.mouseClick(signal.submit_button, Qt.MouseButton.LeftButton)
            await async_wait_until(lambda: bool(signal.result_view.toPlainText()), 10)
            assert signal.result_view.toPlainText() == "Signal 'go': 2 runs took it."
            await async_wait_until(
                lambda: all(session.describe(e).state == "COMPLETED" for e in ids), 10
            )
            assert session.describe(ids[2]).output.value == "bulk"
            signal.close()
            reset = shown(qtbot, BulkRunsDialog(session, WF, "reset"))
            assert reset.headline.text().startswith(
                "Reset the 3 runs matching this filter"
            )
            assert reset.names.toPlainText().splitlines() == [
                "wf-00002 · waits_for_go (COMPLETED)",
                "wf-00001 · waits_for_go (COMPLETED)",
                "wf-00000 · waits_for_go (COMPLETED)",
            ]
            reset.reason.setText("again")
            reset.confirm.setChecked(True)
            qtbot.mouseClick(reset.submit_button, Qt.MouseButton.LeftButton)
            await async_wait_until(lambda: bool(reset.result_view.toPlainText()), 10)
            assert reset.result_view.toPlainText() == "Reset: 3 runs changed."
            assert all(session.describe(e).reset_to is not None for e in ids)
            reset.close()

        qloop.run_until_complete(body())
    finally:
        session.close()
