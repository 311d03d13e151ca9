"""The main window driven through real widgets on real files (offscreen)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QHelpEvent, QTextDocument
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtWidgets import QApplication, QLabel, QMessageBox, QTableView, QToolTip

from harvest_engine import SqliteRuntime
from harvest_gui.models.run_list import COL_STATE, EXEC_ID_ROLE
from harvest_gui.session import ReaderSession, WriterSession
from harvest_gui.views.main_window import MainWindow
from harvest_gui.views.run_detail import TAB_HISTORY
from tests.gui.helpers import async_wait_until, make_runs, waits_for_go

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def window(qtbot, settings) -> MainWindow:  # type: ignore[no-untyped-def]
    w = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.close()


def test_opens_a_file_and_lists_its_runs(window: MainWindow, db_file: Path) -> None:
    assert window.open_path(db_file, read_only=True)
    assert isinstance(window.session, ReaderSession)
    assert window.windowTitle().endswith("runs.db (read-only)")
    assert window.run_list is not None
    model = window.run_list.model
    assert model.rowCount() == 5
    states = sorted(model.data(model.index(r, COL_STATE)) for r in range(5))
    assert states == ["COMPLETED", "COMPLETED", "RUNNING", "RUNNING", "RUNNING"]
    assert window.run_list.state_boxes["RUNNING"].text() == "RUNNING 3"
    assert window.status.mode.text() == "read-only"
    assert "runs.db" in window.status.file.text()
    assert window.status.lock.text().startswith("lock: not taken")


def test_selecting_a_run_fills_every_tab(
    qtbot, window: MainWindow, db_file: Path
) -> None:  # type: ignore[no-untyped-def]
    window.open_path(db_file, read_only=True)
    assert window.run_list is not None
    assert window.detail is not None
    table = window.run_list.table
    table.setFocus()
    qtbot.keyClick(table, Qt.Key.Key_Down)
    exec_id = window.run_list.selected_exec_id()
    assert exec_id == window.detail.exec_id
    summary = window.detail.summary
    assert summary.labels["exec_id"].text() == exec_id
    assert json.loads(summary.payloads["input"].full_text) == {"i": 3}
    output, memo = summary.payloads["output"], summary.payloads["memo"]
    assert output.text.toPlainText() == ""  # absent, not the JSON text "null"
    assert output.text.placeholderText() == "No output yet: the run is still running."
    assert memo.text.placeholderText() == "No memo."
    assert not memo.copy_button.isEnabled()
    history = window.detail.history
    assert history.model.rowCount() >= 1
    assert window.detail.logs.model.rowCount() == 1
    assert "waiting" in window.detail.logs.model.records[0].message
    assert window.detail.costs.totals.text() == "This run recorded no LLM calls."
    assert window.detail.timeline.timeline.lanes[0].key == "workflow"


def test_history_filter_and_event_json(
    qtbot, window: MainWindow, db_file: Path
) -> None:  # type: ignore[no-untyped-def]
    window.open_path(db_file, read_only=True)
    assert window.run_list is not None
    assert window.detail is not None
    done = [
        r
        for r in range(5)
        if window.run_list.model.data(window.run_list.model.index(r, COL_STATE))
        == "COMPLETED"
    ]
    window.run_list.table.selectRow(done[0])
    history = window.detail.history
    types = [
        history.type_filter.itemText(i) for i in range(history.type_filter.count())
    ]
    assert "SignalReceived" in types
    history.type_filter.setCurrentText("SignalReceived")
    assert history.model.rowCount() == 1
    history.table.selectRow(0)
    event = json.loads(history.event_json.full_text)
    assert event["type"] == "SignalReceived"
    assert event["attrs"]["name"] == "go"
    history.type_filter.setCurrentIndex(0)
    qtbot.keyClicks(history.text_filter, "GO")  # by name, case-insensitive
    assert [e.type for e in history.model.records] == [
        "WorkflowStarted",
        "SignalReceived",
    ]
    history.regex_check.setChecked(True)  # waits_for_go vs go
    assert history.model.rowCount() == 0  # a regex is case-sensitive
    history.text_filter.setText("^go$")
    assert [e.type for e in history.model.records] == ["SignalReceived"]


def test_timeline_click_selects_the_event_in_history(
    qtbot, window: MainWindow, db_file: Path
) -> None:  # type: ignore[no-untyped-def]
    window.open_path(db_file, read_only=True)
    assert window.detail is not None
    assert window.run_list is not None
    done = [
        r
        for r in range(5)
        if window.run_list.model.data(window.run_list.model.index(r, COL_STATE))
        == "COMPLETED"
    ]
    window.run_list.table.selectRow(done[0])
    detail = window.detail
    detail.tabs.setCurrentIndex(2)
    view = detail.timeline
    qtbot.waitExposed(view.plot)
    marker = view.timeline.markers[0]
    vb = view.plot.getViewBox()
    from PySide6.QtCore import QPointF

    scene = vb.mapViewToScene(QPointF(marker.at - view.timeline.start, marker.lane))
    item = view.item_at_scene(scene)
    assert item == marker
    view.on_mouse_moved(scene)
    assert view.hover.text().startswith("SignalReceived go")
    point = view.plot.mapFromScene(scene)
    qtbot.mouseClick(view.plot.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert detail.tabs.currentIndex() == TAB_HISTORY
    current = detail.history.current_event()
    assert current is not None
    assert current.seq == marker.seq


def test_filters_states_prefix_search_and_bad_input(
    qtbot, window: MainWindow, db_file: Path
) -> None:  # type: ignore[no-untyped-def]
    window.open_path(db_file, read_only=True)
    rl = window.run_list
    assert rl is not None
    rl.state_boxes["COMPLETED"].setChecked(True)
    assert rl.model.rowCount() == 2
    rl.clear_filters()
    assert rl.model.rowCount() == 5
    qtbot.keyClicks(rl.prefix_filter, "wf-00003")
    qtbot.keyClick(rl.prefix_filter, Qt.Key.Key_Return)
    assert rl.model.rowCount() == 1
    rl.clear_filters()
    rl.search_filter.setText("no equals sign")
    rl.apply_filters()
    assert not rl.message.isHidden()
    assert "key=value" in rl.message.text()
    assert rl.model.rowCount() == 5  # the last good filter stays
    rl.search_filter.setText("")
    rl.after_check.setChecked(True)
    rl.apply_filters()
    assert rl.message.isHidden()
    assert rl.model.rowCount() == 5


def test_shortcuts_f5_ctrl_f_and_sorting(
    qtbot, window: MainWindow, db_file: Path
) -> None:  # type: ignore[no-untyped-def]
    window.open_path(db_file, read_only=True)
    rl = window.run_list
    assert rl is not None
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert rl.name_filter.hasFocus()
    qtbot.keyClick(window, Qt.Key.Key_F5)
    assert window.status.refresh.text().startswith("refreshed ")
    rl.table.sortByColumn(1, Qt.SortOrder.AscendingOrder)
    ids = [rl.proxy.index(r, 1).data() for r in range(5)]
    assert ids == sorted(ids)


def test_writer_mode_drives_runs_live(
    qtbot, qloop, window: MainWindow, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "w.db"
    ids = make_runs(path, 2)

    async def body() -> None:
        assert window.open_path(path)
        session = window.session
        assert isinstance(session, WriterSession)
        assert session.driving
        assert window.status.mode.text() == "writer"
        assert window.status.lock.text().startswith("lock: held by this window")
        rl = window.run_list
        assert rl is not None
        rl.select_exec_id(ids[0])
        session.runtime.send_signal(ids[0], "go", "from the test")
        await async_wait_until(
            lambda: (
                rl.model.data(rl.model.index(rl.model.row_of(ids[0]), COL_STATE))
                == "COMPLETED"
            )
        )
        assert rl.selected_exec_id() == ids[0]
        assert window.detail is not None
        await async_wait_until(
            lambda: window.detail.summary.labels["state"].text() == "COMPLETED"
        )
        assert (
            json.loads(window.detail.summary.payloads["output"].full_text)
            == "from the test"
        )
        window.close_session()
        await async_wait_until(lambda: session.closed)

    qloop.run_until_complete(body())
    SqliteRuntime.open(path).close()  # the lock was freed


def test_recent_files_and_settings_survive(qtbot, settings, db_file: Path) -> None:  # type: ignore[no-untyped-def]
    w = MainWindow(settings)
    qtbot.addWidget(w)
    w.show()
    w.open_path(db_file, read_only=True)
    w.resize(1, 520)  # narrowest allowed; the offscreen screen is small
    saved = w.size()
    w.close()
    assert settings.recent_files() == [str(db_file.resolve())]
    again = MainWindow(settings)
    qtbot.addWidget(again)
    actions = [a for a in again.recent_menu.actions() if a.objectName() == "recent0"]
    assert actions
    actions[0].trigger()
    assert again.session is not None
    assert again.session.path == db_file.resolve()
    assert (
        again.size().height() == saved.height()
    )  # widths clamp to the 800 px offscreen screen
    again.close()


def test_about_names_the_versions(qtbot, window: MainWindow, db_file: Path) -> None:  # type: ignore[no-untyped-def]
    window.open_path(db_file, read_only=True)
    window.own_actions.about.trigger()
    box = window.last_dialog
    assert box is not None
    text = box.informativeText()
    assert "harvest_engine" in text
    assert "PySide6" in text
    assert "schema v" in text
    box.accept()


def test_dark_theme_switches_the_palette(qtbot, window: MainWindow) -> None:  # type: ignore[no-untyped-def]
    window.own_actions.themes["dark"].trigger()
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    assert app.palette().color(app.palette().ColorRole.Window).lightness() < 80
    window.own_actions.themes["light"].trigger()
    assert app.palette().color(app.palette().ColorRole.Window).lightness() > 180


def test_locked_file_offers_read_only(qtbot, window: MainWindow, db_file: Path) -> None:  # type: ignore[no-untyped-def]
    holder = SqliteRuntime.open(db_file)
    try:
        assert not window.open_path(db_file)
        box = window.last_dialog
        assert box is not None
        assert "another harvest writer" in box.text()
        box.button(QMessageBox.StandardButton.Open).click()
        assert isinstance(window.session, ReaderSession)
        assert window.run_list is not None
        assert window.run_list.model.rowCount() == 5
    finally:
        window.close_session()
        holder.close()


@pytest.mark.parametrize("kind", ["garbage", "other_sqlite", "newer_schema"])
def test_bad_files_explain_themselves_and_the_window_stays_usable(
    qtbot,
    window: MainWindow,
    tmp_path: Path,
    db_file: Path,
    kind: str,  # type: ignore[no-untyped-def]
) -> None:
    path = tmp_path / f"{kind}.db"
    if kind == "garbage":
        path.write_bytes(b"<b>not</b> a database " * 100)
        expected = "is not a harvest database"
    elif kind == "other_sqlite":
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE notes (x)")
        conn.commit()
        conn.close()
        expected = "is not a harvest database"
    else:
        make_runs(path, 1)
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA user_version = 999")
        conn.commit()
        conn.close()
        expected = "was written by a newer harvest"
    for read_only in (False, True):
        assert not window.open_path(path, read_only=read_only)
        box = window.last_dialog
        assert box is not None
        assert expected in box.text()
        assert box.textFormat() == Qt.TextFormat.PlainText
        box.accept()
    assert window.session is None
    assert window.stack.currentIndex() == 0
    window.resize(1000, 700)
    qtbot.waitUntil(lambda: window.welcome.message.width() > 0)
    for label in window.stack.widget(0).findChildren(
        QLabel
    ):  # every line readable, none cut
        assert label.height() >= label.heightForWidth(label.width()), label.text()
    assert window.open_path(db_file, read_only=True)  # still usable


def test_payload_html_is_shown_as_plain_text(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "html.db"
    rt = SqliteRuntime.open(path)
    rt.register_workflow(waits_for_go)
    html = "<h1>big</h1><img src=x onerror=alert(1)>"
    rt.start_workflow_with_id("waits_for_go", "<b>bold-id</b>", {"note": html})
    rt.close()
    window.open_path(path, read_only=True)
    assert window.detail is not None
    summary = window.detail.summary
    assert summary.labels["workflow_id"].text() == "<b>bold-id</b>"
    assert summary.labels["workflow_id"].textFormat() == Qt.TextFormat.PlainText
    assert html in summary.payloads["input"].text.toPlainText()
    assert "<b>bold-id</b>" in window.detail.title.text()


def _tooltip_as_drawn(table: QTableView, row: int, column: int) -> str:
    """Hover a cell for real and read back the tooltip as Qt draws it."""
    rect = table.visualRect(table.model().index(row, column))
    event = QHelpEvent(
        QEvent.Type.ToolTip, rect.center(), table.viewport().mapToGlobal(rect.center())
    )
    QApplication.sendEvent(table.viewport(), event)
    label = next(
        w for w in QApplication.topLevelWidgets() if w.objectName() == "qtooltip_label"
    )
    assert isinstance(label, QLabel)
    text = label.text()
    QToolTip.hideText()
    if label.textFormat() == Qt.TextFormat.PlainText or (
        label.textFormat() == Qt.TextFormat.AutoText and not GuiQt.mightBeRichText(text)
    ):
        return text
    doc = QTextDocument()
    doc.setHtml(text)
    return doc.toPlainText()


def test_tooltips_show_ids_and_payloads_as_written(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "html-tips.db"
    rt = SqliteRuntime.open(path)
    rt.register_workflow(waits_for_go)
    rt.start_workflow_with_id("waits_for_go", "<b>bold-id</b>", {"note": "<i>it</i>"})
    rt.close()
    window.open_path(path, read_only=True)
    assert window.run_list is not None
    assert window.detail is not None
    assert _tooltip_as_drawn(window.run_list.table, 0, 1) == "<b>bold-id</b>"
    window.detail.tabs.setCurrentIndex(TAB_HISTORY)
    history = window.detail.history.table
    start_row = next(
        r
        for r in range(history.model().rowCount())
        if "<i>it</i>" in history.model().index(r, 3).data()
    )
    assert "<i>it</i>" in _tooltip_as_drawn(history, start_row, 3)


def test_huge_payload_is_cut_until_show_all(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "huge.db"
    rt = SqliteRuntime.open(path)
    rt.register_workflow(waits_for_go)
    rt.start_workflow_with_id("waits_for_go", "big", {"blob": "x" * 300_000})
    rt.close()
    window.open_path(path, read_only=True)
    assert window.detail is not None
    view = window.detail.summary.payloads["input"]
    assert not view.show_all_button.isHidden()
    assert len(view.text.toPlainText()) < 70_000
    qtbot.mouseClick(view.show_all_button, Qt.MouseButton.LeftButton)
    assert len(view.text.toPlainText()) > 300_000
    view.on_copy()
    assert len(QApplication.clipboard().text()) > 300_000


def test_read_only_follows_a_writer_in_another_process(
    qtbot,
    qloop,
    window: MainWindow,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    path = tmp_path / "live.db"
    make_runs(path, 1)
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/gui/workers/writer.py"), str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout is not None
        assert proc.stdin is not None
        assert proc.stdout.readline().strip() == "ready"
        assert not window.open_path(
            path
        )  # the writer holds the lock: read-only is offered
        box = window.last_dialog
        assert box is not None
        box.button(QMessageBox.StandardButton.Open).click()
        rl = window.run_list
        assert rl is not None
        assert rl.model.rowCount() == 1
        # Clicked by hand: from then on new runs are held (issue 31 §14).
        qtbot.mouseClick(
            rl.table.viewport(),
            Qt.MouseButton.LeftButton,
            pos=rl.table.visualRect(rl.proxy.index(0, 1)).center(),
        )
        selected = rl.selected_exec_id()
        proc.stdin.write("start from-the-other-process\n")
        proc.stdin.flush()
        new_id = proc.stdout.readline().strip()
        committed = time.monotonic()

        async def body() -> None:
            await async_wait_until(
                lambda: rl.model.held_row_of(new_id) >= 0, seconds=1.0
            )

        qloop.run_until_complete(body())
        assert time.monotonic() - committed < 1.0
        # Announced above the list, not slid in under the pointer (issue 17 §3).
        assert rl.new_runs_bar.text() == "▲ 1 new run: click to show"
        assert rl.model.rowCount() == 1
        qtbot.mouseClick(rl.new_runs_bar, Qt.MouseButton.LeftButton)
        assert rl.new_runs_bar.isHidden()
        assert rl.model.data(rl.model.index(0, 0), EXEC_ID_ROLE) == new_id
        assert rl.selected_exec_id() == selected  # the selection stayed
        assert rl.state_boxes["RUNNING"].text() == "RUNNING 2"
    finally:
        window.close_session()
        with proc:  # closes both pipes and waits
            if proc.stdin is not None:
                proc.stdin.write("quit\n")
                proc.stdin.flush()
            proc.wait(timeout=10)


def test_an_empty_list_says_why_and_what_fills_it(
    qtbot, window: MainWindow, tmp_path: Path, db_file: Path
) -> None:  # type: ignore[no-untyped-def]
    empty = tmp_path / "empty.db"
    SqliteRuntime.open(empty).close()
    assert window.open_path(empty, read_only=True)
    rl = window.run_list
    assert rl is not None
    assert rl.empty_note.isVisibleTo(window)
    assert "no runs yet" in rl.empty_note.text()
    assert "another process" in rl.empty_note.text()
    assert window.status.refresh.text().startswith(
        "refreshed "
    )  # when the views read it
    assert window.open_path(empty)
    rl = window.run_list
    assert rl is not None
    assert "Start workflow (Ctrl+N)" in rl.empty_note.text()
    assert window.open_path(db_file, read_only=True)
    rl = window.run_list
    assert rl is not None
    assert not rl.empty_note.isVisibleTo(window)
    rl.name_filter.setText("no_such_workflow")
    qtbot.mouseClick(rl.apply_button, Qt.MouseButton.LeftButton)
    assert rl.empty_note.isVisibleTo(window)
    assert rl.empty_note.text().startswith("No runs match these filters")
    qtbot.mouseClick(rl.clear_button, Qt.MouseButton.LeftButton)
    assert not rl.empty_note.isVisibleTo(window)
    assert rl.model.rowCount() == 5


def test_pending_tab_counts_what_waits_and_says_when_nothing_does(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "pending.db"
    ids = make_runs(path, 2, finish=1)
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(waits_for_go)
        rt.send_signal(ids[1], "go", "later")  # staged: nothing drives it here
    assert window.open_path(path, read_only=True)
    rl, detail = window.run_list, window.detail
    assert rl is not None
    assert detail is not None
    assert rl.select_exec_id(ids[1])
    pending = detail.pending
    assert pending.note.text() == (
        "Pending: 0 activity tasks, 0 timers, 1 staged signal, 0 mutexes."
    )
    assert [box.title() for box, _t, _m in pending.boxes] == [
        "Activity tasks (0)",
        "Unfired timers (0)",
        "Staged signals (1)",
        "Mutexes (0)",
    ]
    assert rl.select_exec_id(ids[0])
    assert pending.note.text().startswith("Nothing is pending")
