"""Where a run waits (Summary, Pending) and its call stack (Stack tab), in writer and read-only windows."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from harvest_engine import RunWait, SqliteRuntime, WorkflowPanicked
from harvest_gui.inspect.waiting import NO_STACK, describe, short_path
from harvest_gui.session import ReaderSession, WriterSession
from harvest_gui.views.run_detail import TAB_STACK, RunDetailView
from tests.gui.apps import waiting as app

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from harvest_gui.session import Session

pytestmark = pytest.mark.gui
APP = "tests.gui.apps.waiting"


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A file with a run waiting on a typed signal, a parent on its child, and a panicked run."""
    path = tmp_path / "waiting.db"
    rt = SqliteRuntime.open(path)
    for wf in app.WORKFLOWS:
        rt.register_workflow(wf)
    ids = {
        "approval": str(rt.start_workflow("approval", "ORD-1")),
        "parent": str(rt.start_workflow("parent")),
        "panics": str(rt.start_workflow("panics")),
        "panicking": str(rt.start_workflow("panics")),
    }

    async def drive() -> None:
        await rt.run_until_blocked(ids["approval"])
        await rt.run_until_blocked(ids["parent"])
        for _ in range(3):
            with contextlib.suppress(WorkflowPanicked):
                await rt.run_until_blocked(ids["panics"])
        with contextlib.suppress(WorkflowPanicked):  # one panic: still RUNNING
            await rt.run_until_blocked(ids["panicking"])

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(drive())
    finally:
        loop.close()
    ids["child"] = next(
        str(e.attrs["child"])
        for e in rt.load_history(ids["parent"])
        if e.type == "ChildWorkflowStarted"
    )
    rt.close()
    return path, ids


def detail_of(qtbot: Any, session: Session, exec_id: str) -> RunDetailView:
    view = RunDetailView(session)
    qtbot.addWidget(view)
    view.show()
    view.show_run(exec_id)
    return view


@pytest.fixture
def writer(runs: Any, qapp: Any) -> Iterator[WriterSession]:
    session = WriterSession.open(runs[0], APP)
    yield session
    session.close()


def test_a_run_waiting_on_a_typed_signal_says_so_in_summary_and_pending(
    qtbot: Any, writer: WriterSession, runs: Any
) -> None:
    view = detail_of(qtbot, writer, runs[1]["approval"])

    lines = view.summary.waiting.lines()
    assert lines[0] == "signal 'approve', payload Approval"
    assert lines[1].startswith("timer harvest.t")
    assert "(in 59m" in lines[1]
    assert view.summary.waiting.headline.text() == "Waiting on 2 things:"
    assert view.pending.waiting.lines() == lines
    assert "Nothing is pending" not in view.pending.note.text()
    wheres = [w.text() for w in view.summary.waiting.findChildren(QLabel, "waitWhere")]
    assert any(
        "in approval: decision = await ctx.receive_signal_timeout" in w for w in wheres
    )


def test_the_stack_tab_shows_where_the_body_is_suspended(
    qtbot: Any, writer: WriterSession, runs: Any
) -> None:
    view = detail_of(qtbot, writer, runs[1]["approval"])
    view.tabs.setCurrentIndex(TAB_STACK)

    assert view.tabs.tabText(TAB_STACK) == "Stac&k"
    assert view.stack_view.text.toPlainText().splitlines() == [
        "workflow approval: awaiting WorkflowContext.receive_signal_timeout",
        f'  File "{short_path(app.__file__)}", line '
        f"{_line_of('receive_signal_timeout')}, in approval",
        '    decision = await ctx.receive_signal_timeout("approve", "1h", Approval)',
    ]
    assert view.stack_view.note.text().startswith("1 suspended coroutine,")


def test_a_parent_links_to_the_child_it_waits_on(
    qtbot: Any, writer: WriterSession, runs: Any
) -> None:
    view = detail_of(qtbot, writer, runs[1]["parent"])
    opened: list[str] = []
    view.open_run.connect(opened.append)

    assert view.summary.waiting.lines() == [f"child run {runs[1]['child']} to finish"]
    (link,) = view.summary.waiting.link_buttons
    qtbot.mouseClick(link, Qt.MouseButton.LeftButton)
    (pending_link,) = view.pending.waiting.link_buttons
    qtbot.mouseClick(pending_link, Qt.MouseButton.LeftButton)

    assert opened == [runs[1]["child"], runs[1]["child"]]


def test_a_panicked_run_shows_its_error_instead_of_waits(
    qtbot: Any, writer: WriterSession, runs: Any
) -> None:
    view = detail_of(qtbot, writer, runs[1]["panics"])

    waiting = view.summary.waiting
    assert not waiting.isHidden()
    assert waiting.headline.text() == "The run panicked: its code raised a bug."
    text = waiting.panic.toPlainText()
    assert "ZeroDivisionError" in text
    assert (
        "Replayed with the loaded code:\nworkflow panics raised ZeroDivisionError"
        in (text)
    )
    assert "    return 1 // 0" in text
    assert view.stack_view.note.text().startswith("The run has ended")


def test_read_only_without_the_code_shows_what_the_file_knows_and_says_why(
    qtbot: Any, runs: Any
) -> None:
    session = ReaderSession.open(runs[0])
    try:
        view = detail_of(qtbot, session, runs[1]["approval"])
        (line,) = view.summary.waiting.lines()
        assert line.startswith("timer harvest.t")
        assert view.summary.waiting.headline.text() == "Waiting on 1 thing:"
        assert "not loaded" in view.summary.waiting.note.text()
        assert "--app" in view.summary.waiting.note.text()
        assert view.stack_view.note.text() == NO_STACK
        view.show_run(runs[1]["child"])  # waits on a signal only: no row says so
        assert view.summary.waiting.lines() == []
        assert view.summary.waiting.headline.text().startswith(
            "The file shows nothing it waits on: it waits on a signal or a condition"
        )
        assert "Nothing is pending" not in view.pending.note.text()
        assert view.stack_view.text.isHidden()
    finally:
        session.close()


def test_read_only_with_app_replays_the_run_with_its_code(
    qtbot: Any, runs: Any
) -> None:
    session = ReaderSession.open(runs[0], APP)
    try:
        view = detail_of(qtbot, session, runs[1]["approval"])
        assert view.summary.waiting.lines()[0] == "signal 'approve', payload Approval"
        assert view.summary.waiting.note.isHidden()
        assert "in approval" in view.stack_view.text.toPlainText()
    finally:
        session.close()


def test_a_timer_line_counts_down_and_then_says_how_late_it_is() -> None:
    due = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
    wait = RunWait("timer", "t1", due_at=due)

    assert describe(wait, due - timedelta(minutes=4, seconds=10)).endswith(
        "(in 4m 10s)"
    )
    assert describe(wait, due + timedelta(seconds=3)).endswith("(overdue by 3s)")
    assert describe(wait, due - timedelta(hours=2, minutes=5)).endswith("(in 2h 5m)")


def _line_of(text: str) -> int:
    with open(app.__file__, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if text in line and ("await" in line or "//" in text):
                return number
    raise AssertionError(text)


def test_a_very_long_run_is_read_from_the_file_without_a_replay(
    qtbot: Any, writer: WriterSession, runs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harvest_gui.inspect import waiting

    monkeypatch.setattr(waiting, "REPLAY_LIMIT", 1)
    view = detail_of(qtbot, writer, runs[1]["approval"])

    (line,) = view.summary.waiting.lines()
    assert line.startswith("timer harvest.t")
    assert "does not replay it on every change" in view.summary.waiting.note.text()
    assert view.stack_view.text.isHidden()


def test_a_running_run_whose_code_raises_shows_the_traceback_not_a_wait(
    qtbot: Any, writer: WriterSession, runs: Any
) -> None:
    view = detail_of(qtbot, writer, runs[1]["panicking"])

    waiting = view.summary.waiting
    assert waiting.headline.text() == "Its code raises: the run cannot move on."
    text = waiting.panic.toPlainText()
    assert "workflow panics raised ZeroDivisionError" in text
    assert f'File "{short_path(app.__file__)}", line {_line_of("1 // 0")}' in text
    assert "    return 1 // 0" in text
    assert "workflow panics raised ZeroDivisionError" in (
        view.stack_view.text.toPlainText()
    )
