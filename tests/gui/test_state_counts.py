"""Runs-per-state counts: at once on a small file, from a worker thread once counting is slow."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from harvest_engine import SqliteRuntime
from harvest_gui import state_counts
from harvest_gui.session import ReaderSession
from harvest_gui.views.run_list import RunListView
from tests.gui.helpers import waits_for_go

if TYPE_CHECKING:
    from pathlib import Path

    import pytest
    from pytestqt.qtbot import QtBot


def start_more(path: Path, n: int) -> None:
    """Commit `n` new RUNNING runs from another connection (the writer)."""
    rt = SqliteRuntime.open(path)
    try:
        rt.register_workflow(waits_for_go)
        for i in range(n):
            rt.start_workflow_with_id("waits_for_go", f"more-{i}", None)
    finally:
        rt.close()


def test_a_quick_count_is_shown_before_the_call_returns(
    qtbot: QtBot, db_file: Path
) -> None:
    session = ReaderSession.open(db_file)
    view = RunListView(session)
    qtbot.addWidget(view)
    try:
        assert view.state_boxes["RUNNING"].text() == "RUNNING 3"
        start_more(db_file, 2)
        view.update_counts()
        assert view.state_boxes["RUNNING"].text() == "RUNNING 5"
        assert not session._counter.in_background
    finally:
        session.close()


def test_a_slow_count_moves_to_a_worker_thread_and_still_arrives(
    qtbot: QtBot, db_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state_counts, "SLOW_S", -1.0)  # every count counts as slow
    counted_on: list[str] = []
    original = state_counts.StateCounter._count_in_worker

    def recording(self: state_counts.StateCounter) -> dict[str, int]:
        counted_on.append(threading.current_thread().name)
        return original(self)

    monkeypatch.setattr(state_counts.StateCounter, "_count_in_worker", recording)
    session = ReaderSession.open(db_file)
    view = RunListView(session)
    qtbot.addWidget(view)
    try:
        assert session._counter.in_background  # the first count ran here and was "slow"
        start_more(db_file, 4)

        view.update_counts()
        view.update_counts()  # a repeat while one is in flight is coalesced

        assert (
            view.state_boxes["RUNNING"].text() == "RUNNING 3"
        )  # not yet: it is in flight
        qtbot.waitUntil(
            lambda: view.state_boxes["RUNNING"].text() == "RUNNING 7", timeout=3000
        )
        qtbot.waitUntil(lambda: not session._counter._busy, timeout=3000)
        assert view.total.text() == "9 runs"
        assert counted_on
        assert all(name.startswith("harvest-counts") for name in counted_on)
        assert len(counted_on) <= 2
    finally:
        session.close()


def test_closing_the_session_stops_the_worker_and_drops_late_counts(
    qtbot: QtBot, db_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state_counts, "SLOW_S", -1.0)
    session = ReaderSession.open(db_file)
    seen: list[dict[str, int]] = []
    session.counts_ready.connect(seen.append)
    session.request_counts()  # here, then marked slow
    session.request_counts()  # on the worker
    session.close()
    qtbot.wait(50)

    assert len(seen) == 1
    assert not any(t.name.startswith("harvest-counts") for t in threading.enumerate())
