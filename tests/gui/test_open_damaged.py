"""Opening a damaged file: the open file stays, the lock is let go, the box says why (issue 31)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harvest_gui.session import ReaderSession, WriterSession
from harvest_gui.views.main_window import MainWindow
from tests.gui.helpers import make_runs

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]
PAGE = 4096


@pytest.fixture
def window(qtbot: Any, settings: Any) -> Iterator[MainWindow]:
    w = MainWindow(settings, app_module="tests.gui.helpers")
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close()


def damaged_file(folder: Path) -> Path:
    """A harvest file whose schema reads but one of its late pages is garbage.

    It opens (the schema and the lock are fine) and breaks when its runs are listed.
    """
    folder.mkdir()
    path = folder / "damaged.db"
    make_runs(path, 30)
    for leftover in folder.iterdir():
        if leftover != path:
            leftover.unlink()
    data = bytearray(path.read_bytes())
    at = (len(data) // PAGE - 2) * PAGE
    data[at : at + PAGE] = b"\xde\xad" * (PAGE // 2)
    path.write_bytes(bytes(data))
    return path


def open_as_writer_elsewhere(path: Path) -> subprocess.CompletedProcess[str]:
    """Another process takes the file's writer lock (and lets it go)."""
    code = (
        "import sys\n"
        "from harvest_engine import DatabaseLocked, SqliteRuntime\n"
        "try:\n"
        "    SqliteRuntime.open(sys.argv[1]).close()\n"
        "except DatabaseLocked:\n"
        "    print('locked'); sys.exit(3)\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__)\n"
        "print('got the lock')\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )


def test_a_damaged_file_keeps_the_open_one_frees_its_lock_and_offers_read_only(
    window: MainWindow, tmp_path: Path, db_file: Path
) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"\x00\xffnot a database" * 500)
    damaged = damaged_file(tmp_path / "sub")
    assert window.open_path(db_file)
    shown = window.session
    assert isinstance(shown, WriterSession)
    assert not window.open_path(garbage)  # an earlier file's box, still showing
    assert not window.open_path(damaged)
    # The file that was open is still open and shown.
    assert window.session is shown
    assert not shown.closed
    assert window.run_list is not None
    assert window.run_list.model.rowCount() == 5
    assert window.windowTitle().startswith("runs.db")
    # The box says what is wrong with this file, not the earlier one.
    box = window.last_dialog
    assert box is not None
    assert "damaged.db is damaged" in box.text()
    assert "garbage" not in box.text() + box.informativeText()
    read_only = box.findChild(type(box.button(box.StandardButton.Ok)), "openReadOnly")
    assert read_only is not None
    assert read_only.text() == "Open read-only"
    # No lock is kept: another process becomes the file's writer at once.
    other = open_as_writer_elsewhere(damaged)
    assert "got the lock" in other.stdout, other.stdout + other.stderr
    # Read-only is tried when asked; it reads no better here, and says so in its own box.
    read_only.click()
    assert window.session is shown
    again = window.last_dialog
    assert again is not None
    assert again is not box
    assert "damaged.db is damaged" in again.text()
    assert again.findChild(type(read_only), "openReadOnly") is None
    assert not isinstance(window.session, ReaderSession)
    for shown_box in window.findChildren(type(box)):
        shown_box.close()
