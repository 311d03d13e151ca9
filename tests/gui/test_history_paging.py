"""The History tab on a real 50,000-event run: pages, type and name filters, regex, bad regex."""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt

from harvest_engine import HistoryCaps, SqliteRuntime, WorkflowContext, workflow
from harvest_gui.inspect.history_filter import PAGE_SIZE
from harvest_gui.session import ReaderSession
from harvest_gui.views.run_detail import TAB_HISTORY, RunDetailView

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui

EVENTS = 50_000
TIMERS = 100


def _value(i: int) -> Callable[[], int]:
    return lambda: i


@workflow
async def huge(ctx: WorkflowContext, n: int) -> int:
    """100 named timers started and cancelled, then side effects up to `n` events in all."""
    for i in range(TIMERS):
        ctx.start_timer(f"poll-{i:03d}", "1h").cancel()
    for i in range(n - 2 - 2 * TIMERS):
        await ctx.side_effect(_value(i))
    return n


@pytest.fixture
def huge_file(tmp_path: Path) -> tuple[Path, str]:
    """A file holding one closed run of exactly 50,000 events."""
    path = tmp_path / "huge.db"
    with SqliteRuntime.open(path) as rt:
        rt.set_history_caps(HistoryCaps(max_events=None, max_bytes=None))
        rt.register_workflow(huge)
        exec_id = str(rt.start_workflow("huge", EVENTS))
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_idle())
        finally:
            loop.close()
    return path, exec_id


@pytest.fixture
def detail(qtbot: Any, huge_file: tuple[Path, str]) -> Iterator[RunDetailView]:
    path, exec_id = huge_file
    session = ReaderSession.open(path)
    view = RunDetailView(session)
    qtbot.addWidget(view)
    view.resize(1000, 700)
    view.show()
    view.show_run(exec_id)
    view.tabs.setCurrentIndex(TAB_HISTORY)
    yield view
    view.close()
    session.close()


def test_a_50000_event_history_shows_one_page(
    qtbot: Any, detail: RunDetailView
) -> None:
    history = detail.history
    assert len(history.events) == EVENTS
    assert history.model.rowCount() == PAGE_SIZE  # never every row
    assert history.model.records[0].seq == 1
    assert history.count.text() == "50,000 events"
    assert history.page_total.text() == "of 50"
    assert not history.prev_page.isEnabled()
    qtbot.mouseClick(history.next_page, Qt.MouseButton.LeftButton)
    assert history.page_box.value() == 2
    assert [history.model.records[i].seq for i in (0, -1)] == [1001, 2000]
    history.page_box.setValue(50)
    assert history.model.records[-1].type == "WorkflowCompleted"
    assert not history.next_page.isEnabled()
    history.page_box.setValue(999)  # clamped to the last page
    assert history.page_box.value() == 50


def test_filters_by_type_and_by_name_text_or_regex(
    qtbot: Any, detail: RunDetailView
) -> None:
    history = detail.history
    history.type_filter.setCurrentText("TimerCancelled")
    assert history.model.rowCount() == TIMERS
    assert history.count.text() == "100 of 50,000 events"
    assert history.page_total.isHidden()  # one page: no page controls
    history.type_filter.setCurrentIndex(0)
    qtbot.keyClicks(history.text_filter, "POLL-04")  # text: substring, any case
    assert {e.attrs["timer_id"] for e in history.model.records} == {
        f"poll-04{i}" for i in range(10)
    }
    assert history.model.rowCount() == 20  # started and cancelled
    history.text_filter.clear()
    qtbot.keyClicks(history.text_filter, r"^poll-0[0-4][05]$")
    assert history.model.rowCount() == 0  # still plain text: no such name
    history.regex_check.setChecked(True)
    names = sorted({e.attrs["timer_id"] for e in history.model.records})
    assert names == [f"poll-0{a}{b}" for a in range(5) for b in (0, 5)]
    assert history.filter_error.isHidden()


def test_an_invalid_regex_is_a_message_in_the_tab(
    qtbot: Any, detail: RunDetailView
) -> None:
    history = detail.history
    history.regex_check.setChecked(True)
    qtbot.keyClicks(history.text_filter, "poll-(")
    assert history.filter_error.isVisible()
    assert history.filter_error.text().startswith(
        "The name filter is not a valid regular expression:"
    )
    assert history.model.rowCount() == PAGE_SIZE  # the name filter is set aside
    qtbot.keyClick(history.text_filter, Qt.Key.Key_Backspace)
    qtbot.keyClicks(history.text_filter, "(00[12])")
    assert history.filter_error.isHidden()
    assert history.model.rowCount() == 4


def test_selecting_an_event_turns_to_its_page_and_shows_its_json(
    qtbot: Any, detail: RunDetailView
) -> None:
    history = detail.history
    history.type_filter.setCurrentText("TimerStarted")  # hides event 31,234
    started = time.perf_counter()
    assert detail.open_event(31_234)
    assert time.perf_counter() - started < 1.0
    assert history.type_filter.currentIndex() == 0
    assert history.page_box.value() == 32
    event = history.current_event()
    assert event is not None
    assert event.seq == 31_234
    assert json.loads(history.event_json.full_text)["type"] == "SideEffectRecorded"
    assert not detail.open_event(EVENTS + 1)


def test_a_running_runs_new_events_keep_the_selection(
    qtbot: Any, tmp_path: Path
) -> None:
    from tests.gui.helpers import make_runs

    path = tmp_path / "live.db"
    (exec_id,) = make_runs(path, 1)
    session = ReaderSession.open(path)
    view = RunDetailView(session)
    qtbot.addWidget(view)
    view.show_run(exec_id)
    history = view.history
    history.table.selectRow(0)
    before = history.model.rowCount()
    rt = SqliteRuntime.open(path)
    try:
        from tests.gui.helpers import waits_for_go

        rt.register_workflow(waits_for_go)
        rt.send_signal(exec_id, "go", "now")
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_idle())
        finally:
            loop.close()
    finally:
        rt.close()
    view.refresh()
    assert history.model.rowCount() > before
    current = history.current_event()
    assert current is not None
    assert current.seq == 1
    view.close()
    session.close()
