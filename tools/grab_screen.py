"""Save a picture of a whole X screen to a PNG: `python -m tools.grab_screen OUT`.

`make run-virtual` runs the app on an invisible Xvfb screen and prints, with
``--how``, the command that pictures that screen from any terminal: it names
the display and its ``XAUTHORITY`` (xvfb-run's server refuses clients without
it) and needs nothing beyond the project's own Qt (no imagemagick).
`make screenshot` starts the app, takes the picture itself and stops.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtGui import QImage

SETTLE_S = 1.0
"""Once something is drawn, how long to let the window finish painting before the picture."""
SAMPLES = 64
"""Pixels per side of the grid `drawn` looks at."""


def how(out: str) -> str:
    """The command, as text to paste anywhere, that pictures this process's X screen."""
    assignments = [f"DISPLAY={shlex.quote(os.environ.get('DISPLAY', ''))}"]
    xauthority = os.environ.get("XAUTHORITY")
    if xauthority:
        assignments.append(f"XAUTHORITY={shlex.quote(xauthority)}")
    command = [
        *assignments,
        "QT_QPA_PLATFORM=xcb",
        shlex.quote(sys.executable),
        "-m",
        "tools.grab_screen",
        shlex.quote(out),
    ]
    return f"cd {shlex.quote(os.getcwd())} && {' '.join(command)}"


def drawn(image: QImage) -> bool:
    """Whether the screen shows anything: more than one colour on a grid of samples."""
    width, height = image.width(), image.height()
    if width == 0 or height == 0:
        return False
    first = image.pixel(0, 0)
    return any(
        image.pixel(x * (width - 1) // (SAMPLES - 1), y * (height - 1) // (SAMPLES - 1))
        != first
        for x in range(SAMPLES)
        for y in range(SAMPLES)
    )


def grab(out: Path, wait: float) -> bool:
    """Save the screen to `out` once something is drawn (up to `wait` s); whether it was."""
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication(["grab_screen"])
    screen = app.primaryScreen()
    deadline = time.monotonic() + wait
    while True:
        shown = drawn(screen.grabWindow(0).toImage())
        if shown or time.monotonic() >= deadline:
            break
        time.sleep(0.25)
    if shown:
        time.sleep(SETTLE_S)
    if not screen.grabWindow(0).save(str(out)):
        raise OSError(f"could not write {out}")
    return shown


def main(argv: list[str] | None = None) -> int:
    """Picture the screen (exit 1 when it stayed blank), or print the command with --how."""
    parser = argparse.ArgumentParser(prog="python -m tools.grab_screen")
    parser.add_argument("out", help="the PNG file to write")
    parser.add_argument(
        "--wait",
        type=float,
        default=10.0,
        help="seconds to wait for a window to be drawn (default 10)",
    )
    parser.add_argument(
        "--how",
        action="store_true",
        help="print the command that pictures this display from any terminal",
    )
    args = parser.parse_args(argv)
    if args.how:
        print(how(args.out))
        return 0
    if not os.environ.get("DISPLAY"):
        print("grab_screen: no DISPLAY to picture", file=sys.stderr)
        return 2
    if not grab(Path(args.out), args.wait):
        print(
            f"grab_screen: the screen stayed blank; saved {args.out}", file=sys.stderr
        )
        return 1
    print(f"saved {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
