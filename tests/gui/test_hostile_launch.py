"""A file that opens but fails its first reads (a table or column missing, a damaged page) is said in a dialog.

Such a file passes the open's checks; the run list's first reads then
raised out of `open_path`, so a launch with it printed a traceback or
exited without a word. Now the window stays and says why, in every mode.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harvest_gui.views.main_window import MainWindow
from tests.engine import hostile_files as hf

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[2]


def damaged_runs_page(path: Path) -> None:
    """Garble the root page of the runs table: the file opens, listing its runs fails."""
    conn = sqlite3.connect(path)
    (root,) = conn.execute(
        "SELECT rootpage FROM sqlite_master WHERE name = 'harvest_executions'"
    ).fetchone()
    (size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    data = bytearray(path.read_bytes())
    start = (root - 1) * size
    data[start : start + size] = b"\xde\xad\xbe\xef" * (size // 4)
    path.write_bytes(bytes(data))


MAKERS = {
    "dropped_events": hf.dropped_events,
    "dropped_state_column": hf.dropped_state_column,
    "damaged_runs_page": damaged_runs_page,
}
MODES = {"writer": [], "read-only": ["--read-only"], "client": ["--client"]}


@pytest.fixture(scope="module")
def sound(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hf.prepare_sound(tmp_path_factory.mktemp("sound"))


def hostile(kind: str, sound: Path, folder: Path) -> Path:
    path = folder / f"{kind}.db"
    path.write_bytes(sound.read_bytes())
    MAKERS[kind](path)
    return path


@pytest.fixture
def window(qtbot: Any, settings: Any) -> Iterator[MainWindow]:
    w = MainWindow(settings, app_module=None)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close()


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_a_file_failing_its_first_reads_is_refused_in_a_dialog(
    window: MainWindow, sound: Path, tmp_path: Path, kind: str, mode: str
) -> None:
    path = hostile(kind, sound, tmp_path)
    opened = window.open_path(
        path, read_only=mode == "read-only", client=mode == "client"
    )
    assert not opened
    box = window.last_dialog
    assert box is not None
    assert box.windowTitle() == "Cannot open file"
    assert path.name in box.text()
    assert "Traceback" not in box.informativeText()
    box.accept()
    assert window.isVisible()
    assert window.session is None
    assert window.run_list is None


def wait_for_sigterm_handler(proc: subprocess.Popen[str]) -> bool:
    """Wait until the app installed its SIGTERM handler (it does once the file was opened).

    Read from /proc (SigCgt), so a slow start under load is no failure; False
    when the process ended first.
    """
    deadline = time.monotonic() + 60
    status = Path(f"/proc/{proc.pid}/status")
    while time.monotonic() < deadline and proc.poll() is None:
        for row in status.read_text().splitlines():
            if (
                row.startswith("SigCgt:")
                and int(row.split()[1], 16) >> (signal.SIGTERM - 1) & 1
            ):
                return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_a_launch_with_such_a_file_stays_up_without_a_traceback(
    sound: Path, tmp_path: Path, kind: str, mode: str
) -> None:
    path = hostile(kind, sound, tmp_path)
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "PYTHONPATH": str(ROOT),
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "harvest_gui", *MODES[mode], str(path)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready = wait_for_sigterm_handler(proc)
        time.sleep(1)  # the event loop runs a while: a late failure would end it
        alive = proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert ready, err
    assert alive, err
    assert "Traceback" not in err
    assert proc.returncode == 0, err
