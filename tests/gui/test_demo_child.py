"""The demo order process ships through a child workflow: links both ways, a child lane, time travel."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtCore import Qt

from harvest_engine import ExecutionFilter, SqliteReader, SqliteRuntime
from harvest_gui.demo.seed import register, seed
from harvest_gui.demo.workflows import WORKFLOWS
from harvest_gui.inspect.history_as_of import query_as_of, state_as_of
from harvest_gui.inspect.timeline import CHILDREN_LANE, build_timeline
from harvest_gui.views.main_window import MainWindow
from harvest_gui.views.run_detail import TAB_HISTORY, TAB_TIMELINE

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui


def run_of(reader: SqliteReader, workflow_id: str) -> str:
    page = reader.list_executions(ExecutionFilter().workflow_id(workflow_id))
    return str(page.executions[0].exec_id)


async def drive_until_closed(rt: SqliteRuntime, exec_id: str) -> None:
    """Drive with a clock that jumps 5 s ahead whenever nothing moved for 0.5 s (timers fire)."""
    clock = datetime.now(UTC)
    idle = 0
    for _ in range(2000):
        if await rt.poll_once_as_of(clock):
            idle = 0
            continue
        if rt.describe(exec_id).state != "RUNNING":
            return
        idle += 1
        await asyncio.sleep(0.05)  # activity bodies finish in real time
        if idle >= 10:
            clock += timedelta(seconds=5)
            idle = 0


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A seeded demo file where ORD-1001 ran to the end; (path, order run, its child)."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    with SqliteRuntime.open(path) as rt:
        register(rt)
        started = seed(rt)
        assert len(started) == 5
        order = str(started[0])
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(drive_until_closed(rt, order))
        finally:
            loop.close()
        assert rt.describe(order).state == "COMPLETED"
        history = rt.load_history(order)
    children = [e.attrs["child"] for e in history if e.type == "ChildWorkflowStarted"]
    assert len(children) == 1
    return path, order, str(children[0])


@pytest.fixture
def window(qtbot: Any, settings: Any) -> Iterator[MainWindow]:
    w = MainWindow(settings, app_module="harvest_gui.demo.seed")
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close()


def open_on_order(
    window: MainWindow, demo_file: tuple[Path, str, str]
) -> tuple[str, str]:
    """Open the demo file read-only with the order selected; (order, child)."""
    path, order, child = demo_file
    assert window.open_path(path, read_only=True)
    assert window.run_list is not None
    assert window.detail is not None
    assert window.run_list.select_exec_id(order)
    return order, child


def test_the_order_ships_through_a_ship_order_child(
    demo_file: tuple[Path, str, str],
) -> None:
    path, order, child = demo_file
    with SqliteReader.open(path) as reader:
        kid = reader.describe(child)
        parent = reader.describe(order)
        history = reader.load_history(order)
    assert kid.workflow_name == "ship_order"
    assert kid.state == "COMPLETED"
    assert str(kid.parent_exec_id) == order
    assert "picked up" in str(parent.output)
    ended = next(e for e in history if e.type == "ChildWorkflowCompleted")
    assert ended.attrs["target"] == child
    tl = build_timeline(history)
    lane = next(i for i, ln in enumerate(tl.lanes) if ln.key == CHILDREN_LANE)
    (bar,) = tl.bars_in_lane(lane)
    assert bar.result == "completed"
    assert bar.label == f"ship_order {child}"
    assert "picked up" in bar.detail
    started = next(e.seq for e in history if e.type == "ChildWorkflowStarted")
    assert [p.kind for p in state_as_of(history, started).pending] == ["child"]
    assert state_as_of(history, ended.seq).pending == []
    # Time travel asks the body's status query at any event.
    assert query_as_of(WORKFLOWS, history, 1, "status") == "received"
    assert query_as_of(WORKFLOWS, history, started, "status").startswith("shipping")
    assert query_as_of(WORKFLOWS, history, history[-1].seq, "status") == "done"


def test_summary_links_go_to_the_child_and_back(
    qtbot: Any, window: MainWindow, demo_file: tuple[Path, str, str]
) -> None:
    order, child = open_on_order(window, demo_file)
    summary = window.detail.summary
    links = {b.text(): b for b in summary.link_buttons}
    assert list(links) == [f"Child: {child}"]
    qtbot.mouseClick(links[f"Child: {child}"], Qt.MouseButton.LeftButton)
    assert window.run_list.selected_exec_id() == child
    assert summary.labels["workflow_name"].text() == "ship_order"
    back = {b.text(): b for b in summary.link_buttons}
    assert list(back) == [f"Parent: {order}"]
    qtbot.mouseClick(back[f"Parent: {order}"], Qt.MouseButton.LeftButton)
    assert window.run_list.selected_exec_id() == order


def test_the_timeline_shows_the_child_lane_and_clicks_through(
    qtbot: Any, window: MainWindow, demo_file: tuple[Path, str, str]
) -> None:
    _order, child = open_on_order(window, demo_file)
    detail = window.detail
    detail.tabs.setCurrentIndex(TAB_TIMELINE)
    view = detail.timeline
    qtbot.waitExposed(view.plot)
    keys = [lane.key for lane in view.timeline.lanes]
    assert CHILDREN_LANE in keys
    lane = keys.index(CHILDREN_LANE)
    (bar,) = view.timeline.bars_in_lane(lane)
    from PySide6.QtCore import QPointF

    vb = view.plot.getViewBox()
    middle = (bar.start + bar.end) / 2 - view.timeline.start
    scene = vb.mapViewToScene(QPointF(middle, lane))
    assert view.item_at_scene(scene) == bar
    view.on_mouse_moved(scene)
    assert child in view.hover.text()
    qtbot.mouseClick(
        view.plot.viewport(),
        Qt.MouseButton.LeftButton,
        pos=view.plot.mapFromScene(scene),
    )
    assert detail.tabs.currentIndex() == TAB_HISTORY
    current = detail.history.current_event()
    assert current is not None
    assert current.type == "ChildWorkflowStarted"
