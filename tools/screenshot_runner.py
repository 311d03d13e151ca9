"""The command line every screenshot script shares: an output folder, the app, its loop, a work folder."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import qasync

from harvest_gui import theme
from harvest_gui.app import make_application

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
