"""Whether there is a screen to show the window on, and what to say when there is none (no Qt)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

NO_DISPLAY = """\
harvest-gui: there is no display to show the window on: DISPLAY and WAYLAND_DISPLAY
are not set (an SSH session, a container or a headless box?).

To see the inspector:
  - start it from a desktop session, or over SSH with X forwarding (ssh -X host);
  - or run it on a virtual screen anyway: make run-virtual (nothing is visible there;
    the command prints how to take a picture of it), make screenshot saves one
    picture of it to shot.png, and make screenshots renders every view to PNG files.
"""


def missing_display(env: Mapping[str, str], platform: str = sys.platform) -> str | None:
    """The message to print when Qt would have no screen, else None.

    Qt's own failure ("could not connect to display", then an abort) says
    neither what happened nor how to see the window. Only Linux and the BSDs
    need a display server; an explicit QT_QPA_PLATFORM (offscreen, vnc, ...)
    is the user's choice and is left alone.
    """
    if not platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return None
    if env.get("QT_QPA_PLATFORM", "") not in ("", "xcb", "wayland"):
        return None
    if env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"):
        return None
    return NO_DISPLAY
