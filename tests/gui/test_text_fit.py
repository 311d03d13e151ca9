"""Long texts are cut where the user can tell (never mid-word with no sign) and widen nothing."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMainWindow

from harvest_gui.views.elided import ElidedLabel
from harvest_gui.views.status_bar import InspectorStatusBar, fit_words

pytestmark = pytest.mark.gui


def test_fit_words_ends_at_a_word_with_an_ellipsis() -> None:
    text = "Run until blocked stopped: the activity charge_card raised CardDeclined"
    shown = fit_words(text, len, 40)
    assert shown.endswith(" …")
    assert text.startswith(shown[:-2])
    assert text[len(shown) - 2] == " "  # the cut falls between two words
    assert fit_words("short", len, 40) == "short"


@pytest.fixture
def window(qtbot: Any) -> QMainWindow:
    window = QMainWindow()
    qtbot.addWidget(window)
    return window


@pytest.fixture
def bar(qtbot: Any, window: QMainWindow) -> InspectorStatusBar:
    bar = InspectorStatusBar()
    window.setStatusBar(bar)
    window.resize(900, 300)
    window.show()
    qtbot.waitExposed(window)
    bar.mode.setText("writer")
    bar.file.setText("/home/someone/.local/share/harvest/harvest-gui/demo.harvest.db")
    bar.lock.setText("lock: held by this window (demo.harvest.db.lock)")
    bar.refresh.setText("refreshed 12:00:01")
    return bar


def test_a_status_message_gets_the_room_of_the_file_and_lock_fields(
    qtbot: Any, bar: InspectorStatusBar
) -> None:
    message = "3b0e4a6e-7f3c-4a55-9bbd-6f3d1b0f8a11: waiting for signal 'approve'"
    bar.say(message, 10_000)
    assert bar.currentMessage() == message
    bar.clearMessage()
    assert bar.file.maximumWidth() > 10_000  # the fields take their room back


def test_a_status_message_too_long_for_the_window_ends_at_a_word(
    qtbot: Any, bar: InspectorStatusBar
) -> None:
    message = "Drive: " + " ".join(["CardDeclined: the card was declined"] * 12)
    bar.say(message, 10_000)
    shown = bar.currentMessage()
    assert shown.endswith(" …")
    assert message.startswith(shown[:-2])
    assert message[len(shown) - 2] == " "
    assert "CardDeclined: the card was declined" in bar.toolTip()


def test_an_elided_label_never_asks_for_its_whole_text_as_minimum(qtbot: Any) -> None:
    label = ElidedLabel("x")
    qtbot.addWidget(label)
    label.setText("w" * 1_000_000)
    assert len(label.text()) < 1_000  # a megabyte never reaches the widget
    assert label.minimumSizeHint().width() < 100
    label.resize(200, 20)
    label.show()
    assert label.shown_text().endswith("…")
    assert "1,000,000 characters" in label.text()


def test_run_list_headers_fit_and_search_attributes_read_as_key_value(
    qtbot: Any, tmp_path: Any
) -> None:
    from harvest_engine import SqliteRuntime, StartOptions
    from harvest_gui.models.run_list import COLUMNS
    from harvest_gui.session import ReaderSession
    from harvest_gui.views.run_list import RunListView
    from tests.gui.helpers import waits_for_go

    path = tmp_path / "attrs.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(waits_for_go)
        rt.start_workflow_with_options(
            "waits_for_go",
            None,
            StartOptions(
                workflow_id="o-1",
                search_attributes={"customer": "acme", "total": 120.5},
            ),
        )
    session = ReaderSession.open(path)
    try:
        view = RunListView(session)
        qtbot.addWidget(view)
        header = view.table.horizontalHeader()
        metrics = header.fontMetrics()
        for col, title in enumerate(COLUMNS):
            assert header.sectionSize(col) > metrics.horizontalAdvance(title), title
        last = view.model.index(0, len(COLUMNS) - 1)
        assert view.model.data(last) == "customer=acme, total=120.5"
    finally:
        session.close()


def test_a_result_does_not_squeeze_the_cancel_dialogs_explanation(
    qtbot: Any, tmp_path: Any
) -> None:
    from harvest_gui.forms.end_run import EndRunDialog
    from harvest_gui.session import WriterSession
    from tests.gui.helpers import make_runs

    path = tmp_path / "runs.db"
    (exec_id,) = make_runs(path, 1)
    session = WriterSession.open(path, "tests.gui.helpers")
    try:
        dlg = EndRunDialog(session, exec_id, "cancel")
        qtbot.addWidget(dlg)
        dlg.show()
        qtbot.waitExposed(dlg)
        dlg.confirm.setChecked(True)
        qtbot.mouseClick(dlg.submit_button, Qt.MouseButton.LeftButton)
        assert dlg.result_view.isVisible()
        explain = dlg.explain
        assert explain.height() >= explain.heightForWidth(explain.width())
        assert explain.geometry().top() >= 0
    finally:
        session.close()


def test_a_one_line_output_wraps_instead_of_scrolling_sideways(qtbot: Any) -> None:
    from harvest_gui.views.payload import PayloadView

    view = PayloadView("Output", "payloadOutput")
    qtbot.addWidget(view)
    view.resize(500, 200)
    view.show()
    qtbot.waitExposed(view)
    view.set_text(
        '"' + "ORD-1002: reserved 1x gizmo; charged 19.00 EUR; shipped " * 6 + '"'
    )
    assert view.text.horizontalScrollBar().maximum() == 0
    assert view.text.document().blockCount() == 1  # one line of text ...
    assert view.text.document().lineCount() > 1  # ... shown on several
