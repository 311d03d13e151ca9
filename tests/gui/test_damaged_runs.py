"""A run the engine flags as damaged is marked in the run list and the run detail, never shown as sound."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine.append_only import with_guard_off
from harvest_gui.models.run_list import COL_STATE, DAMAGED_MARK
from harvest_gui.session import ReaderSession
from harvest_gui.views.main_window import MainWindow
from harvest_gui.views.run_detail import RunDetailView
from tests.gui.helpers import make_runs

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui


@pytest.fixture
def damaged_file(tmp_path: Path) -> tuple[Path, str, str]:
    """A file of 3 runs; the middle one's row expects events its history lacks."""
    path = tmp_path / "damaged.db"
    ids = make_runs(path, 3, finish=1)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        with with_guard_off(conn):
            conn.execute(
                "UPDATE harvest_executions SET next_seq = next_seq + 5 WHERE exec_id = ?",
                (ids[1],),
            )
    finally:
        conn.close()
    return path, ids[1], ids[0]


@pytest.fixture
def window(qtbot: Any, settings: Any) -> Iterator[MainWindow]:
    w = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close()


def test_the_run_list_marks_a_damaged_run_and_says_why(
    qtbot: Any, window: MainWindow, damaged_file: tuple[Path, str, str]
) -> None:
    path, bad, good = damaged_file
    assert window.open_path(path, read_only=True)
    assert window.run_list is not None
    model = window.run_list.model
    bad_row, good_row = model.row_of(bad), model.row_of(good)
    state = model.index(bad_row, COL_STATE)
    assert model.data(state) == DAMAGED_MARK
    tip = model.data(state, 3)  # ToolTipRole
    assert "Damaged: its history ends at seq" in tip
    assert "Stored state: RUNNING" in tip
    assert model.data(model.index(good_row, COL_STATE)) == "COMPLETED"
    assert window.run_list.select_exec_id(bad)
    assert window.detail is not None
    banner = window.detail.damaged
    assert banner.isVisibleTo(window)
    assert "its history ends at seq" in banner.text()
    qtbot.waitUntil(lambda: banner.height() > 0)
    # the banner sits under the title in its own size, not spread over the pane
    assert banner.height() < window.detail.height() / 3


def test_the_detail_banner_shows_the_listings_flag_for_a_run_that_still_reads(
    qtbot: Any, tmp_path: Path
) -> None:
    path = tmp_path / "sound.db"
    exec_id = make_runs(path, 1)[0]
    session = ReaderSession.open(path)
    try:
        view = RunDetailView(session)
        qtbot.addWidget(view)
        view.listed_damage = lambda e: (
            "it is COMPLETED but..." if e == exec_id else None
        )
        view.show()
        view.show_run(exec_id)
        assert view.damaged.isVisibleTo(view)
        assert (
            "flags this run as damaged (it is COMPLETED but...)" in view.damaged.text()
        )
        assert view.tabs.isVisibleTo(
            view
        )  # what reads is still shown, under the warning
        view.listed_damage = lambda _e: None
        view.show_run(None)
        view.show_run(exec_id)
        assert not view.damaged.isVisibleTo(view)
    finally:
        session.close()
