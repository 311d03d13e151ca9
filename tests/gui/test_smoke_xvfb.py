"""Smoke test: the real app under Xvfb starts on a demo workspace and stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.xvfb,
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("xvfb-run") is None, reason="xvfb-run is not installed"
    ),
]

START_TIMEOUT_S = 30.0
RUN_FOR_S = 3.0


def _wait_for(predicate: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return True
        time.sleep(0.05)
    return False


def test_app_runs_the_demo_under_xvfb_and_exits_cleanly_on_sigterm(
    tmp_path: Path,
) -> None:
    env = dict(
        os.environ,
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        QT_QPA_PLATFORM="xcb",
    )
    pid_file = tmp_path / "pid"
    # The shell writes its pid and then becomes the app (exec), so the signal
    # reaches python itself, not xvfb-run.
    script = f'echo $$ > "{pid_file}"; exec "{sys.executable}" -m harvest_gui'
    proc = subprocess.Popen(
        ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", "sh", "-c", script],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _wait_for(
            lambda: pid_file.exists() and pid_file.read_text().strip(), START_TIMEOUT_S
        )
        demo = tmp_path / "data" / "harvest" / "harvest-gui" / "demo.harvest.db"
        assert _wait_for(demo.exists, START_TIMEOUT_S), (
            "the demo workspace was not created"
        )
        time.sleep(RUN_FOR_S)  # the writer drives the demo runs meanwhile
        assert proc.poll() is None, "the app ended by itself"
        os.kill(int(pid_file.read_text()), signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Traceback" not in out + err
    assert "Task was destroyed" not in err
    settings = tmp_path / "config" / "harvest" / "harvest-gui.conf"
    assert "geometry" in settings.read_text(), "window state is saved on the way out"


def test_harvest_gui_entry_point_starts() -> None:
    script = Path(sys.executable).with_name("harvest-gui")
    if not script.exists():
        pytest.skip(
            "harvest-gui is not installed next to this python (pip install -e .)"
        )
    done = subprocess.run(
        [str(script), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("harvest-gui ")
