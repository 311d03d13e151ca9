"""The Progress tab: a run's events as a table and its stream's values as they arrive (writer and client mode)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import SqliteRuntime
from harvest_gui.client_session import ClientSession
from harvest_gui.session import WriterSession
from harvest_gui.views.run_detail import TAB_PROGRESS, RunDetailView
from tests.gui.helpers import async_wait_until, reporter, serving

if TYPE_CHECKING:
    from collections.abc import Iterator

    from harvest_gui.session_base import Session
    from harvest_gui.views.progress import ProgressView

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]


def rows(view: ProgressView, which: str) -> list[list[str]]:
    m = view.events_model if which == "events" else view.streams_model
    return [
        [str(m.data(m.index(r, c))) for c in range(m.columnCount())]
        for r in range(m.rowCount())
    ]


def detail_view(qtbot: Any, session: Session, exec_id: str) -> RunDetailView:
    view = RunDetailView(session)
    qtbot.addWidget(view)
    session.changed.connect(view.refresh)
    view.show()
    view.show_run(exec_id)
    view.tabs.setCurrentIndex(TAB_PROGRESS)
    assert view.tabs.tabText(TAB_PROGRESS) == "P&rogress"
    return view


def test_the_progress_tab_follows_a_writer_windows_run_live(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    session = WriterSession.open(tmp_path / "progress.db")
    rt = session.runtime
    rt.register_workflow(reporter)
    exec_id = str(rt.start_workflow("reporter"))
    try:
        view = detail_view(qtbot, session, exec_id)
        progress = view.progress

        async def body() -> None:
            await rt.run_until_idle()
            await async_wait_until(
                lambda: rows(progress, "events") == [["phase", '"started"']]
            )
            assert (
                progress.streams_caption.text()
                == "Streams (ctx.write_stream): none written"
            )
            for value in ("a", {"n": 2}):
                rt.send_signal(exec_id, "tick", value)
                await rt.run_until_idle()
            await async_wait_until(lambda: len(rows(progress, "streams")) == 2)
            assert rows(progress, "streams") == [
                ["ticks", "0", '"a"'],
                ["ticks", "1", '{"n": 2}'],
            ]
            assert progress.streams_caption.text() == (
                "Streams (ctx.write_stream): ticks: 2 values, open"
            )
            rt.send_signal(exec_id, "tick", "end")
            await rt.run_until_idle()
            await async_wait_until(lambda: "closed" in progress.streams_caption.text())
            assert progress.streams_caption.text() == (
                "Streams (ctx.write_stream): ticks: 2 values, closed"
            )
            assert rows(progress, "events") == [
                ["phase", '"done"'],
                ["ticks seen", "2"],
            ]
            assert progress.events_caption.text() == "Events (ctx.set_event): 2 events"

        qloop.run_until_complete(body())
    finally:
        session.close()
        rt.close()


@pytest.fixture
def served_reporter(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A file with one `reporter` run, served by another process."""
    path = tmp_path / "served.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(reporter)
        exec_id = str(rt.start_workflow("reporter"))
    with serving(path):
        yield path, exec_id


def test_the_progress_tab_follows_a_served_run_in_client_mode(
    qtbot: Any, qloop: Any, served_reporter: tuple[Path, str]
) -> None:
    path, exec_id = served_reporter
    session = ClientSession.open(path)
    try:
        view = detail_view(qtbot, session, exec_id)
        progress = view.progress

        async def body() -> None:
            await async_wait_until(
                lambda: rows(progress, "events") == [["phase", '"started"']], 6
            )
            assert view.summary.labels["current_details"].text() == "waiting for ticks"
            await session.client.send_signal(exec_id, "tick", "first")
            await async_wait_until(
                lambda: rows(progress, "streams") == [["ticks", "0", '"first"']], 6
            )
            await session.client.send_signal(exec_id, "tick", "end")
            await async_wait_until(
                lambda: "closed" in progress.streams_caption.text(), 6
            )
            assert rows(progress, "events")[0] == ["phase", '"done"']
            await asyncio.sleep(0)

        qloop.run_until_complete(body())
    finally:
        session.close()
