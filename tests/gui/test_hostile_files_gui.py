"""Hostile files: each is refused in words, the window stays, and nothing is left beside it."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtWidgets import QApplication

from harvest_gui.views.main_window import MainWindow
from tests.gui.helpers import make_runs

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.gui


@pytest.fixture
def window(qtbot: Any, settings: Any) -> Iterator[MainWindow]:
    w = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close()


def hostile(kind: str, folder: Path) -> tuple[Path, str]:
    """A path of `kind` and words its dialog must hold."""
    path = folder / f"{kind}.db"
    if kind == "garbage":
        path.write_bytes(b"\x00\xffnot a database" * 500)
        return path, "is not a harvest database"
    if kind == "foreign_sqlite":
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE notes (x)")
        conn.commit()
        conn.close()
        return path, "is not a harvest database"
    if kind == "newer_schema":
        make_runs(path, 1)
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA user_version = 999")
        conn.commit()
        conn.close()
        for leftover in folder.iterdir():  # as if copied here alone
            if leftover != path:
                leftover.unlink()
        return path, "was written by a newer harvest"
    if kind == "damaged":
        make_runs(path, 3)
        for leftover in folder.iterdir():
            if leftover != path:
                leftover.unlink()
        data = bytearray(path.read_bytes())
        page = 4096
        for at in range(page, len(data), page):  # every page but the header's
            data[at : at + 64] = b"\xde\xad" * 32
        path.write_bytes(bytes(data))
        return path, ""
    if kind == "directory":
        path.mkdir()
        return path, ""
    if kind == "inside_a_file":
        blocker = folder / "plain.txt"
        blocker.write_text("a file, not a folder")
        return blocker / "x.db", ""
    raise AssertionError(kind)


def beside(folder: Path) -> list[str]:
    """The folder's files, less SQLite's own -wal/-shm (any reader of a WAL file makes them)."""
    return sorted(
        p.name for p in folder.iterdir() if not p.name.endswith(("-wal", "-shm"))
    )


KINDS = [
    "garbage",
    "foreign_sqlite",
    "newer_schema",
    "damaged",
    "directory",
    "inside_a_file",
]


@pytest.mark.parametrize("read_only", [False, True], ids=["writer", "read-only"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_file_is_refused_in_words_and_the_window_stays(
    qtbot: Any, window: MainWindow, tmp_path: Path, kind: str, read_only: bool
) -> None:
    path, words = hostile(kind, tmp_path)
    before = beside(tmp_path)
    assert not window.open_path(path, read_only=read_only)
    box = window.last_dialog
    assert box is not None
    assert box.windowTitle() == "Cannot open file"
    assert path.name in box.text()
    assert words in box.text()
    assert "Traceback" not in box.informativeText()
    assert "bug" not in box.informativeText().lower()
    box.accept()
    assert window.isVisible()
    assert window.session is None
    # Nothing is left beside the refused file: no lock file, no new database.
    assert beside(tmp_path) == before
    assert QApplication.activeModalWidget() is None


def test_storage_and_damage_errors_are_said_as_such_one_box_at_a_time(
    qtbot: Any, window: MainWindow
) -> None:
    from harvest_engine import DatabaseCorrupt, StorageError
    from harvest_gui.app import show_error

    box = show_error(window, StorageError(path="/x/runs.db", reason="disk full"))
    assert box is not None
    assert box.windowTitle() == "Storage problem"
    assert "disk full" in box.informativeText()
    assert box.detailedText() == ""  # not a bug: no traceback
    assert (
        show_error(window, DatabaseCorrupt(path="/x/runs.db", reason="page 7")) is None
    )
    box.accept()
    damaged = show_error(window, DatabaseCorrupt(path="/x/runs.db", reason="page 7"))
    assert damaged is not None
    assert damaged.windowTitle() == "Damaged file"
    damaged.accept()
    bug = show_error(window, RuntimeError("oops"))
    assert bug is not None
    assert bug.windowTitle() == "Unexpected error"
    assert "RuntimeError: oops" in bug.detailedText()
    bug.accept()
    assert window.isVisible()


def test_a_file_that_breaks_under_a_reader_is_said_once_and_polling_stops(
    qtbot: Any, db_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harvest_engine import StorageError
    from harvest_gui import async_bridge
    from harvest_gui.session import ReaderSession

    shown: list[BaseException] = []
    monkeypatch.setattr(async_bridge, "_presenter", shown.append)
    session = ReaderSession.open(db_file)
    try:

        def broken() -> int:
            raise StorageError(path=str(db_file), reason="I/O error")

        monkeypatch.setattr(session.reader, "data_version", broken)
        session.on_poll()
        session.on_poll()
        assert [type(e) for e in shown] == [StorageError]
        assert not session._timer.isActive()
        session.refresh()  # F5 tries again
        assert session._timer.isActive()
    finally:
        session.close()


def test_a_run_with_damaged_rows_shows_a_banner_and_the_others_still_read(
    qtbot: Any, window: MainWindow, tmp_path: Path
) -> None:
    path = tmp_path / "damaged-run.db"
    bad, good = make_runs(path, 2)
    conn = sqlite3.connect(path)
    triggers = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' "
        "AND tbl_name = 'harvest_events'"
    ).fetchall()
    for (name,) in triggers:  # the file's guard against edits, as damage ignores it
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute(
        "UPDATE harvest_events SET attrs = '{not json' WHERE exec_id = ?", (bad,)
    )
    conn.commit()
    conn.close()
    assert window.open_path(path, read_only=True)
    assert window.run_list is not None
    assert window.detail is not None
    assert window.run_list.select_exec_id(bad)
    detail = window.detail
    assert detail.damaged.isVisible()
    assert "stored rows are damaged" in detail.damaged.text()
    assert detail.title.text().endswith(": damaged")
    assert not detail.tabs.isVisible()
    assert window.last_dialog is None  # a banner, not an error box
    assert window.run_list.select_exec_id(good)
    assert not detail.damaged.isVisible()
    assert detail.tabs.isVisible()
    assert detail.summary.labels["exec_id"].text() == good


def test_a_wrong_app_module_is_said_and_creates_no_database(
    qtbot: Any, settings: Any, tmp_path: Path
) -> None:
    w = MainWindow(settings, app_module="no_such_package.flows")
    qtbot.addWidget(w)
    w.show()
    path = tmp_path / "new.db"
    assert not w.open_path(path)
    box = w.last_dialog
    assert box is not None
    assert "no_such_package" in box.informativeText()
    box.accept()
    assert list(tmp_path.iterdir()) == []
    w.close()
