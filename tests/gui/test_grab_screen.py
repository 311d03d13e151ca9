"""`make run-virtual`'s "picture it" command works as printed; `make screenshot`'s grab waits for the window."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from tools.grab_screen import drawn

pytestmark = [
    pytest.mark.xvfb,
    pytest.mark.skipif(
        shutil.which("xvfb-run") is None, reason="xvfb-run is not installed"
    ),
]

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = ROOT / "Makefile"


def recipe(target: str) -> str:
    """The Makefile's recipe of `target`, its continuation lines joined."""
    text = MAKEFILE.read_text()
    found = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert found is not None, f"no {target} target"
    return found.group(1).replace("\\\n", " ")


def test_the_makefile_prints_and_takes_pictures_with_grab_screen() -> None:
    assert "tools.grab_screen --how" in recipe("run-virtual")
    assert "import -window" not in recipe("run-virtual")
    assert "tools.grab_screen --wait" in recipe("screenshot")


def test_the_printed_picture_command_works_as_printed_from_another_terminal(
    tmp_path: Path,
) -> None:
    shot = tmp_path / "shot.png"
    printed = tmp_path / "how.txt"
    pid_file = tmp_path / "pid"
    env = dict(
        os.environ,
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        PYTHONPATH=str(ROOT),
    )
    # As run-virtual does: the app on an Xvfb screen, and the line it prints.
    python = sys.executable
    script = (
        f'QT_QPA_PLATFORM=xcb "{python}" -m harvest_gui & echo $! > "{pid_file}"; '
        f'"{python}" -m tools.grab_screen --how "{shot}" > "{printed}"; wait'
    )
    app = subprocess.Popen(
        ["xvfb-run", "-a", "-s", "-screen 0 1366x768x24", "sh", "-c", script],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (printed.exists() and printed.read_text().strip()):
            assert time.monotonic() < deadline, "run-virtual printed no command"
            assert app.poll() is None, app.communicate()
            time.sleep(0.1)
        command = printed.read_text().strip()
        # Another terminal: no display of its own, in another folder.
        elsewhere = {
            k: v
            for k, v in os.environ.items()
            if k not in ("DISPLAY", "XAUTHORITY", "QT_QPA_PLATFORM", "PYTHONPATH")
        }
        done = subprocess.run(
            ["sh", "-c", command],
            env=elsewhere,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        image = QImage(str(shot))
        assert (image.width(), image.height()) == (1366, 768)
        assert drawn(image), "the picture is blank"
    finally:
        if pid_file.exists() and pid_file.read_text().strip():
            os.kill(int(pid_file.read_text()), signal.SIGTERM)
        try:
            app.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            app.kill()
            app.communicate()
