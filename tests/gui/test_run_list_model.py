"""RunListModel pages lazily over cursor pages and merges live changes row by row."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from PySide6.QtCore import QPersistentModelIndex, Qt

from harvest_engine import ExecutionFilter, SqliteRuntime
from harvest_gui.models import run_list as run_list_model
from harvest_gui.models.run_list import (
    COL_STATE,
    COLUMNS,
    EXEC_ID_ROLE,
    PAUSED_MARK,
    RunListModel,
)
from harvest_gui.session import ReaderSession
from tests.gui.helpers import make_runs, quick, waits_for_go

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def many(tmp_path: Path) -> Path:
    path = tmp_path / "many.db"
    make_runs(path, 45, finish=10)
    return path


@pytest.fixture
def session(many: Path, qapp: object) -> ReaderSession:
    s = ReaderSession.open(many)
    yield s
    s.close()


def test_model_passes_qtmodeltester(
    qtmodeltester: object, session: ReaderSession
) -> None:
    model = RunListModel(session, page_size=10)
    qtmodeltester.check(model)  # type: ignore[attr-defined]
    while model.canFetchMore():
        model.fetchMore()
    qtmodeltester.check(model)  # type: ignore[attr-defined]


def test_first_page_then_fetch_more_until_the_end(session: ReaderSession) -> None:
    model = RunListModel(session, page_size=10)
    assert model.rowCount() == 10
    assert model.columnCount() == len(COLUMNS)
    assert model.canFetchMore()
    pages = 1
    while model.canFetchMore():
        model.fetchMore()
        pages += 1
    assert model.rowCount() == 45
    assert pages == 5
    ids = [model.data(model.index(r, 1)) for r in range(45)]
    assert ids == [f"wf-{i:05d}" for i in reversed(range(45))]  # newest first


def test_cells_show_state_and_colour(session: ReaderSession) -> None:
    model = RunListModel(session, page_size=100)
    states = {model.data(model.index(r, COL_STATE)) for r in range(model.rowCount())}
    assert states == {"RUNNING", "COMPLETED"}
    assert (
        model.data(model.index(0, COL_STATE), Qt.ItemDataRole.ForegroundRole)
        is not None
    )
    done = [
        r for r in range(45) if model.data(model.index(r, COL_STATE)) == "COMPLETED"
    ]
    assert model.data(model.index(done[0], 6))  # a duration for closed runs
    assert model.data(model.index(0, 6)) == ""  # none while running


def test_filter_by_state_and_prefix(session: ReaderSession) -> None:
    model = RunListModel(session, page_size=100)
    model.set_filter(ExecutionFilter().state("COMPLETED"))
    assert model.rowCount() == 10
    model.set_filter(ExecutionFilter().workflow_id_prefix("wf-0004"))
    assert model.rowCount() == 5


def test_refresh_holds_new_runs_until_shown_then_inserts_them_on_top_keeping_the_selected_row(
    qapp: object, many: Path, session: ReaderSession
) -> None:
    model = RunListModel(session, page_size=20)
    model.fetchMore()
    selected = QPersistentModelIndex(model.index(7, 0))
    selected_id = model.data(model.index(7, 0), EXEC_ID_ROLE)
    inserted: list[tuple[int, int]] = []
    held: list[int] = []
    model.rowsInserted.connect(lambda _p, first, last: inserted.append((first, last)))
    model.held_changed.connect(held.append)
    rt = SqliteRuntime.open(many)
    try:
        rt.register_workflow(waits_for_go)
        rt.register_workflow(quick)
        rt.start_workflow_with_id("quick", "new-1", 1)
        rt.start_workflow_with_id("quick", "new-2", 2)
    finally:
        rt.close()
    model.refresh()
    assert inserted == []  # nothing moved under the pointer
    assert held == [2]
    assert [r.workflow_id for r in model.held] == ["new-2", "new-1"]
    assert selected.row() == 7
    model.refresh()  # a second change keeps holding them, announced once
    assert held == [2]
    assert model.show_held() == 2
    assert held == [2, 0]
    assert inserted == [(0, 1)]
    assert model.rowCount() == 42
    assert [model.data(model.index(r, 1)) for r in (0, 1)] == ["new-2", "new-1"]
    assert selected.row() == 9
    assert model.data(model.index(selected.row(), 0), EXEC_ID_ROLE) == selected_id
    assert model.canFetchMore()
    while model.canFetchMore():
        model.fetchMore()
    assert model.rowCount() == 47


def test_refresh_updates_changed_rows_in_place_and_drops_rows_leaving_the_filter(
    qapp: object, many: Path, session: ReaderSession
) -> None:
    model = RunListModel(session, page_size=100)
    model.set_filter(ExecutionFilter().state("RUNNING"))
    assert model.rowCount() == 35
    target = model.data(model.index(3, 0), EXEC_ID_ROLE)
    removed: list[tuple[int, int]] = []
    model.rowsRemoved.connect(lambda _p, first, last: removed.append((first, last)))
    rt = SqliteRuntime.open(many)
    try:
        rt.register_workflow(waits_for_go)
        rt.send_signal(target, "go", "ok")
        loop = asyncio.new_event_loop()
        loop.run_until_complete(rt.run_until_blocked(target))
        loop.close()
    finally:
        rt.close()
    model.refresh()
    assert removed == [(3, 3)]
    assert model.row_of(target) == -1
    model.set_filter(ExecutionFilter())
    changed: list[int] = []
    model.dataChanged.connect(lambda tl, _br, _roles=(): changed.append(tl.row()))
    model.refresh()
    assert changed == []  # nothing changed since the last read
    assert model.data(model.index(model.row_of(target), COL_STATE)) == "COMPLETED"


def test_sort_role_gives_comparable_values(session: ReaderSession) -> None:
    from harvest_gui.models.run_list import SORT_ROLE

    model = RunListModel(session, page_size=5)
    started = [model.data(model.index(r, 4), SORT_ROLE) for r in range(5)]
    assert all(isinstance(v, float) for v in started)
    assert started == sorted(started, reverse=True)


def test_new_runs_show_at_once_when_every_listed_run_left_the_filter(
    qapp: object, tmp_path: Path
) -> None:
    path = tmp_path / "one.db"
    (only,) = make_runs(path, 1)  # one RUNNING run, parked on "go"
    session = ReaderSession.open(path)
    try:
        model = RunListModel(session, page_size=20)
        model.set_filter(ExecutionFilter().state("RUNNING"))
        assert model.rowCount() == 1
        rt = SqliteRuntime.open(path)
        try:
            rt.register_workflow(waits_for_go)
            rt.start_workflow_with_id("waits_for_go", "new-1", 1)
            rt.start_workflow_with_id("waits_for_go", "new-2", 2)
            rt.send_signal(only, "go", "done")
            asyncio.run(rt.run_until_blocked(only))  # it leaves the RUNNING filter
        finally:
            rt.close()
        model.refresh()
        # Nothing of the list is left to keep under the pointer: no empty list
        # with a "2 new runs" bar, the new runs are simply the list.
        assert [model.data(model.index(r, 1)) for r in range(model.rowCount())] == [
            "new-2",
            "new-1",
        ]
        assert model.held == []
        model.refresh()
        assert model.show_held() == 0
        assert model.rowCount() == 2  # never listed twice
    finally:
        session.close()


def test_a_paused_run_is_marked_in_the_state_cell(tmp_path: Path, qapp: object) -> None:
    path = tmp_path / "paused.db"
    ids = make_runs(path, 2)
    with SqliteRuntime.open(path) as rt:
        rt.pause(ids[0], "checking")
    session = ReaderSession.open(path)
    try:
        model = RunListModel(session, page_size=10)
        states = {
            model.data(model.index(r, 1)): model.data(model.index(r, COL_STATE))
            for r in range(model.rowCount())
        }
    finally:
        session.close()
    assert states == {"wf-00000": f"RUNNING {PAUSED_MARK}", "wf-00001": "RUNNING"}


def test_a_refresh_reads_the_loaded_rows_and_a_margin_not_a_thousand(
    qapp: object, many: Path, session: ReaderSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each commit by another process re-reads the list on the UI thread: only what is shown."""
    model = RunListModel(session, page_size=10)
    asked: list[int] = []
    listing = session.list_executions

    def spy(flt: ExecutionFilter) -> object:
        asked.append(flt.page_size)
        return listing(flt)

    monkeypatch.setattr(session, "list_executions", spy)
    model.refresh()
    assert asked == [10 + run_list_model.REFRESH_MARGIN]
    # More new runs than the margin: the refresh pages on until it meets the loaded rows.
    monkeypatch.setattr(run_list_model, "REFRESH_MARGIN", 1)
    rt = SqliteRuntime.open(many)
    try:
        rt.register_workflow(waits_for_go)
        rt.register_workflow(quick)
        for n in range(3):
            rt.start_workflow_with_id("quick", f"late-{n}", n)
    finally:
        rt.close()
    asked.clear()
    model.refresh()
    assert [r.workflow_id for r in model.held] == ["late-2", "late-1", "late-0"]
    assert len(asked) > 1
    assert model.rowCount() == 10
