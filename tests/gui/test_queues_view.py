"""Flow control in the window: the Queues page, an ENQUEUED run's place, ENQUEUED in the counts and filters."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QCheckBox, QLabel

from harvest_engine import Queue, SqliteRuntime, StartOptions
from harvest_gui.client_session import ClientSession
from harvest_gui.session import WriterSession
from harvest_gui.views.main_window import MainWindow
from harvest_gui.views.queues import QueuesView
from harvest_gui.views.run_detail import RunDetailView
from harvest_gui.views.run_list import RunListView
from tests.gui.helpers import waits_for_go

if TYPE_CHECKING:
    from pathlib import Path

    from harvest_gui.session_base import Session

pytestmark = pytest.mark.gui


def queued_runs(rt: Any) -> list[str]:
    """Three runs in queue "emails" (one at a time): the first runs, two wait."""
    rt.register_workflow(waits_for_go)
    rt.register_queue(Queue("emails", concurrency=1))
    ids = [
        str(
            rt.start_workflow_with_options(
                "waits_for_go", i, StartOptions(queue="emails")
            ).exec_id
        )
        for i in range(3)
    ]
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(rt.run_until_idle())
    finally:
        loop.close()
    return ids


def check_window(qtbot: Any, session: Session, ids: list[str]) -> None:
    states = [session.describe(e).state for e in ids]
    assert states == ["RUNNING", "ENQUEUED", "ENQUEUED"]
    queues = QueuesView(session)
    qtbot.addWidget(queues)
    m = queues.model
    rows = [
        [str(m.data(m.index(r, c))) for c in range(m.columnCount())]
        for r in range(m.rowCount())
    ]
    emails = next(r for r in rows if r[0] == "emails")
    assert emails[1:4] == ["1 at once", "1", "2"]
    assert emails[4]  # how long the oldest has waited
    assert emails[5] == "concurrency (1 of 1 running)"
    assert queues.note.text().startswith(f"{len(rows)} queue")
    detail = RunDetailView(session)
    qtbot.addWidget(detail)
    detail.show()
    detail.show_run(ids[2])
    assert detail.summary.labels["closed"].text() == "not yet: waiting its turn"
    assert detail.summary.waiting.lines() == [
        "its turn in queue 'emails': position 2 (1 ahead), held by its concurrency limit"
    ]
    runs = RunListView(session)
    qtbot.addWidget(runs)
    runs.show_counts(session.counts_by_state())
    box = runs.findChild(QCheckBox, "state_ENQUEUED")
    assert box is not None
    assert box.text().startswith("ENQUEUED")
    assert "2" in box.text()
    # The total has a cell of its own: eight state boxes filled the row it sat in.
    runs.show()
    total = runs.findChild(QLabel, "runTotal")
    assert total is not None
    assert total.text()
    for other in runs.findChildren(QCheckBox):
        if other.objectName().startswith("state_"):
            assert not other.geometry().intersects(total.geometry()), other.objectName()


def test_a_writer_window_shows_queues_and_where_a_run_waits(
    qtbot: Any, tmp_path: Path
) -> None:
    session = WriterSession.open(tmp_path / "queued.db")
    try:
        ids = queued_runs(session.runtime)
        check_window(qtbot, session, ids)
    finally:
        session.close()


def test_a_client_window_shows_queues_and_where_a_run_waits(
    qtbot: Any, tmp_path: Path
) -> None:
    path = tmp_path / "queued.db"
    with SqliteRuntime.open(path) as rt:
        ids = queued_runs(rt)
    session = ClientSession.open(path)
    try:
        check_window(qtbot, session, ids)
    finally:
        session.close()


def test_view_queues_and_ctrl_3_open_the_queues_page(
    qtbot: Any, settings: Any, db_file: Path
) -> None:
    """Found under Xvfb: the page had neither a View menu entry nor a key."""
    window = MainWindow(settings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    try:
        assert window.open_path(db_file)
        action = window.findChild(QAction, "actionQueues")
        assert action is not None
        assert action.text() == "&Queues"
        assert action.shortcut().toString() == "Ctrl+3"
        assert action.isEnabled()
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow)
        target = window.focusWidget() or window  # the run table: keys go where focus is
        qtbot.keyClick(target, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)
        assert window.pages.tabText(window.pages.currentIndex()) == "Queues"
    finally:
        window.close_session()
