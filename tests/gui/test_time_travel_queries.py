"""Time travel asks queries as of the chosen event by replaying the history prefix."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt

from harvest_engine import (
    QueryNotFound,
    SqliteReader,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)
from harvest_gui.inspect.history_as_of import query_as_of
from harvest_gui.session import ReaderSession, WriterSession
from harvest_gui.views.time_travel import NO_CODE_TEXT, TimeTravelView
from tests.gui.apps import tracker

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui
APP = "tests.gui.apps.tracker"


@pytest.fixture
def tracked(tmp_path: Path) -> tuple[Path, str]:
    """One closed `tracker` run: started, packed 3, shipped after go=now."""
    path = tmp_path / "tracker.db"
    with SqliteRuntime.open(path) as rt:
        tracker.register(rt)
        exec_id = str(rt.start_workflow("tracker", 3))
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_idle())
            rt.send_signal(exec_id, "go", "now")
            loop.run_until_complete(rt.run_until_idle())
        finally:
            loop.close()
    return path, exec_id


@pytest.fixture
def writer(tracked: tuple[Path, str]) -> Iterator[WriterSession]:
    session = WriterSession.open(tracked[0], APP)
    yield session
    session.close()


def seq_of(view: TimeTravelView, event_type: str) -> int:
    return next(e.seq for e in view.history if e.type == event_type)


def test_query_as_of_each_prefix_without_qt(tracked: tuple[Path, str]) -> None:
    path, exec_id = tracked
    with SqliteReader.open(path) as reader:
        history = reader.load_history(exec_id)
    done = next(e.seq for e in history if e.type == "ActivityCompleted")
    code = [tracker.tracker]
    assert query_as_of(code, history, 1, "stage") == "started"
    assert query_as_of(code, history, done, "stage") == "packed"
    assert query_as_of(code, history, history[-1].seq, "stage") == "shipped now"
    assert query_as_of(code, history, done, "boxes", 10) == 13
    with pytest.raises(QueryNotFound):
        query_as_of(code, history, 1, "boxes")  # not registered yet at event 1


def test_the_panel_answers_as_of_the_slider_and_follows_it(
    qtbot: Any, writer: WriterSession, tracked: tuple[Path, str]
) -> None:
    view = TimeTravelView(writer, tracked[1])
    qtbot.addWidget(view)
    view.show()
    assert view.query_notice.isHidden()
    names = [view.query_name.itemText(i) for i in range(view.query_name.count())]
    assert names == [
        "clock",
        "stage",
        "boxes",
    ]  # the @query function first, then the body's
    view.slider.setValue(1)
    view.query_name.setCurrentText("stage")
    qtbot.mouseClick(view.query_button, Qt.MouseButton.LeftButton)
    assert view.query_error is None
    assert view.query_result.toPlainText() == 'stage at event 1: "started"'
    view.slider.setValue(
        seq_of(view, "ActivityCompleted")
    )  # the answer follows the slider
    assert view.query_result.toPlainText().endswith('"packed"')
    qtbot.keyClick(view.slider, Qt.Key.Key_End)
    assert view.query_result.toPlainText().endswith('"shipped now"')
    view.query_name.setCurrentText("boxes")
    view.query_arg.setText("4")
    qtbot.mouseClick(view.query_button, Qt.MouseButton.LeftButton)
    assert view.query_result.toPlainText().endswith(": 7")


def test_a_declarative_query_is_answered_as_of_the_slider_too(
    qtbot: Any, writer: WriterSession, tracked: tuple[Path, str]
) -> None:
    view = TimeTravelView(writer, tracked[1])
    qtbot.addWidget(view)
    view.show()
    done = seq_of(view, "ActivityCompleted")
    view.slider.setValue(1)
    view.query_name.setCurrentText("clock")
    qtbot.mouseClick(view.query_button, Qt.MouseButton.LeftButton)
    assert view.query_error is None
    assert (
        view.query_result.toPlainText()
        == f'clock at event 1: "{view.history[0].at.isoformat()}"'
    )
    view.slider.setValue(done)
    at = view.history[done - 1].at.isoformat()
    assert view.query_result.toPlainText() == f'clock at event {done}: "{at}"'


def test_query_errors_are_shown_in_words(
    qtbot: Any, writer: WriterSession, tracked: tuple[Path, str]
) -> None:
    view = TimeTravelView(writer, tracked[1])
    qtbot.addWidget(view)
    view.show()
    view.slider.setValue(1)
    view.query_name.setCurrentText("boxes")
    qtbot.mouseClick(view.query_button, Qt.MouseButton.LeftButton)
    assert view.query_error is not None
    assert view.query_error.startswith("Query not found:")
    assert "known: clock, stage" in view.query_error
    view.slider.setValue(view.slider.maximum())
    view.query_arg.setText("boom")  # not JSON
    qtbot.mouseClick(view.query_button, Qt.MouseButton.LeftButton)
    assert view.query_error.startswith("The argument is not JSON")
    view.query_arg.setText('"boom"')  # the handler raises
    qtbot.mouseClick(view.query_button, Qt.MouseButton.LeftButton)
    assert view.query_error == "no such box"
    assert "Traceback" not in view.query_result.toPlainText()


def test_read_only_without_code_says_so(qtbot: Any, tracked: tuple[Path, str]) -> None:
    session = ReaderSession.open(tracked[0])
    try:
        view = TimeTravelView(session, tracked[1])
        qtbot.addWidget(view)
        view.show()
        assert view.query_notice.isVisible()
        assert view.query_notice.text() == NO_CODE_TEXT
        assert view.query_notice.text().startswith("Read-only without code")
        assert not view.query_button.isEnabled()
        assert view.state.text() == "COMPLETED"  # the rest of time travel still works
    finally:
        session.close()


def test_a_writer_without_the_workflow_registered_says_so(
    qtbot: Any, tracked: tuple[Path, str]
) -> None:
    session = WriterSession.open(tracked[0], "tests.gui.helpers")
    try:
        view = TimeTravelView(session, tracked[1])
        qtbot.addWidget(view)
        view.show()
        assert "'tracker' is not registered in this window" in view.query_notice.text()
        assert not view.query_button.isEnabled()
    finally:
        session.close()


@workflow
async def early_reader(ctx: WorkflowContext, _: Any) -> Any:
    """Reads its notes on its first line and answers them in a query."""
    early = ctx.drain_signals("note")
    ctx.register_query("early", lambda: early)
    return await ctx.wait_for_signal("go")


def test_a_query_inside_the_first_drives_signal_batch_answers_as_of_its_end(
    tmp_path: Path,
) -> None:
    path = tmp_path / "batch.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(early_reader)
        exec_id = str(rt.start_workflow("early_reader", None))
        rt.send_signal(exec_id, "note", "a")
        rt.send_signal(exec_id, "note", "b")
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_idle())
        finally:
            loop.close()
        history = rt.load_history(exec_id)
    assert [e.seq for e in history if e.attrs.get("before_start")] == [2, 3]
    # Event 2 is the first of two signals the body only ever met together.
    assert query_as_of([early_reader], history, 2, "early") == ["a", "b"]
    assert query_as_of([early_reader], history, 3, "early") == ["a", "b"]


@workflow
async def late_reader(ctx: WorkflowContext, _: Any) -> Any:
    """Records a step, waits for a note, then drains the rest and answers them in a query."""
    await ctx.side_effect(lambda: 0)
    first = await ctx.wait_for_signal("note")
    rest = ctx.drain_signals("note")
    ctx.register_query("rest", lambda: [first, *rest])
    return await ctx.wait_for_signal("go")


def test_a_query_inside_a_later_drives_signal_batch_answers_as_of_its_end(
    tmp_path: Path,
) -> None:
    path = tmp_path / "late.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(late_reader)
        exec_id = str(rt.start_workflow("late_reader", None))
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_idle())
            for note in ("a", "b", "c"):
                rt.send_signal(exec_id, "note", note)
            loop.run_until_complete(rt.run_until_idle())
        finally:
            loop.close()
        history = rt.load_history(exec_id)
    assert [e.seq for e in history if e.attrs.get("with_next")] == [3, 4]
    for seq in (3, 4, 5):
        assert query_as_of([late_reader], history, seq, "rest") == ["a", "b", "c"]
