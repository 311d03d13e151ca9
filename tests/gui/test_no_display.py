"""Without a display, the app says what happened and how to see it, instead of aborting (item 14)."""

from __future__ import annotations

import os
import subprocess
import sys

from harvest_gui.display import missing_display


def test_no_display_is_named_only_where_qt_needs_one() -> None:
    assert missing_display({}, "linux") is not None
    assert missing_display({"DISPLAY": ":0"}, "linux") is None
    assert missing_display({"WAYLAND_DISPLAY": "wayland-0"}, "linux") is None
    assert missing_display({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None
    assert missing_display({"QT_QPA_PLATFORM": "xcb"}, "linux") is not None
    assert missing_display({}, "darwin") is None
    assert missing_display({}, "win32") is None


def test_the_app_without_a_display_explains_and_exits_2() -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    done = subprocess.run(
        [sys.executable, "-m", "harvest_gui"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "no display to show the window on" in done.stderr
    assert "make run-virtual" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
