"""The run filters: names offered as you type, and counts that follow the filters (issue 17)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import ExecutionFilter, SqliteRuntime
from harvest_gui.inspect.run_filters import count_matching, unknown_name_hint
from harvest_gui.session import ReaderSession
from harvest_gui.views.run_list import RunListView
from tests.gui.helpers import make_runs, quick, waits_for_go

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui


@pytest.fixture
def two_names(tmp_path: Path) -> Path:
    """5 waits_for_go runs (2 completed) and 2 completed quick runs."""
    path = tmp_path / "names.db"
    make_runs(path, 5, finish=2)
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(waits_for_go)
        rt.register_workflow(quick)
        for i in range(2):
            rt.start_workflow_with_id("quick", f"q-{i}", i)
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_idle())
        finally:
            loop.close()
    return path


@pytest.fixture
def view(qtbot: Any, two_names: Path) -> Iterator[RunListView]:
    session = ReaderSession.open(two_names)
    v = RunListView(session)
    qtbot.addWidget(v)
    yield v
    session.close()


def test_counts_and_total_follow_the_filters(view: RunListView) -> None:
    assert view.total.text() == "7 runs"
    view.name_filter.setText("quick")
    view.apply_filters()
    assert view.model.rowCount() == 2
    assert view.total.text() == "2 of 7 runs match"
    assert view.state_boxes["COMPLETED"].text() == "COMPLETED 2"
    assert view.state_boxes["RUNNING"].text() == "RUNNING 0"
    view.clear_filters()
    assert view.total.text() == "7 runs"
    assert view.state_boxes["RUNNING"].text() == "RUNNING 3"


def test_a_state_box_narrows_the_total_but_keeps_the_other_counts(
    view: RunListView,
) -> None:
    view.name_filter.setText("waits_for_go")
    view.state_boxes["RUNNING"].setChecked(True)  # applies at once
    assert view.model.rowCount() == 3
    assert view.total.text() == "3 of 7 runs match"
    assert view.state_boxes["COMPLETED"].text() == "COMPLETED 2"


def test_the_name_box_lists_the_names_and_a_partial_name_gets_a_hint(
    view: RunListView,
) -> None:
    assert view.name_filter.offered() == ["quick", "waits_for_go"]
    completer = view.name_filter.completer()
    completer.setCompletionPrefix("for")
    assert completer.currentCompletion() == "waits_for_go"  # any part of a name
    view.name_filter.setText("waits")
    view.apply_filters()
    assert view.model.rowCount() == 0
    assert view.message.text() == (
        "No workflow is named 'waits': did you mean waits_for_go?"
    )


def test_counting_stops_at_the_cap(two_names: Path) -> None:
    session = ReaderSession.open(two_names)
    try:
        counted = count_matching(
            session.list_executions, ExecutionFilter().state("RUNNING"), cap=1
        )
    finally:
        session.close()
    assert counted.total == 7  # one page of 1,000 holds them all; the state is ignored
    assert not counted.capped
    assert unknown_name_hint("quick", ["quick"]) is None
    assert unknown_name_hint("zz", ["a", "b"]) == (
        "No workflow is named 'zz': the names are a, b"
    )
