"""What every screenshot script shares: its command line, the demo window, saving a shot."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import qasync
from PySide6.QtCore import QSettings
from PySide6.QtGui import QGuiApplication

from harvest_gui import theme
from harvest_gui.app import DEMO_APP, make_application
from harvest_gui.session import WriterSession
from harvest_gui.settings import Settings
from harvest_gui.views.main_window import MainWindow

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

Shoot = Callable[[Path, Path], Awaitable[object]]
"""`shoot(out, work)`: write the PNGs into `out`, using `work` for its files."""


def run_shots(module: str, shoot: Shoot, argv: list[str] | None = None) -> int:
    """Run `shoot` on a light-themed app; 2 with a usage line without exactly one OUTDIR."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(f"usage: python -m {module} OUTDIR", file=sys.stderr)
        return 2
    out = Path(args[0])
    out.mkdir(parents=True, exist_ok=True)
    app = make_application()
    theme.apply_theme(app, "light")
    app.setQuitOnLastWindowClosed(False)  # the loop, not the window, ends the script
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory() as work:
        loop.run_until_complete(shoot(out, Path(work)))
    loop.close()
    return 0


async def save_shot(
    widget: QWidget, out: Path, name: str, *, screen: bool = False, settle: float = 0.3
) -> Path:
    """Let the widget paint, then save `out/name.png`; `screen` takes the whole screen.

    The whole screen shows a dialog over its window as a user sees it; it
    needs a real display (xcb), so offscreen it falls back to the widget.
    """
    await asyncio.sleep(settle)
    path = out / f"{name}.png"
    if screen and QGuiApplication.platformName() == "xcb":
        widget.screen().grabWindow(0).save(str(path))
    else:
        widget.grab().save(str(path))
    print(path)
    return path


def open_demo_window(work: Path) -> tuple[MainWindow, WriterSession]:
    """A 1366x768 main window writing a fresh demo file in `work`, and its session."""
    settings = Settings(
        QSettings(str(work / "settings.ini"), QSettings.Format.IniFormat)
    )
    window = MainWindow(settings, app_module=DEMO_APP)
    window.resize(1366, 768)  # MainWindow fits it to the 1366x768 screen's room
    window.show()
    window.open_path(work / "demo.harvest.db")
    session = window.session
    if not isinstance(session, WriterSession):
        raise RuntimeError("the demo file did not open as writer")
    return window, session
