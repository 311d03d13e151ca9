"""The application: QApplication identity, theme, the qasync loop, and the three launch forms."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

os.environ.setdefault(
    "QT_API", "pyside6"
)  # qasync and pyqtgraph pick the binding (pitfall 8)
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import qasync
from PySide6.QtCore import QStandardPaths, QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QMessageBox

from harvest_engine import HarvestError
from harvest_gui import APP_TITLE, __version__, async_bridge, theme
from harvest_gui.settings import APPLICATION, ORGANIZATION, Settings
from harvest_gui.views.dialogs import error_texts, message_box

if TYPE_CHECKING:
    from types import TracebackType

    from harvest_gui.target import Target
    from harvest_gui.views.main_window import MainWindow

DEMO_APP = "harvest_gui.demo.seed"
DEMO_FILE = "demo.harvest.db"


def make_application(argv: list[str] | None = None) -> QApplication:
    """The QApplication with its identity set (before any QSettings is made)."""
    existing = QApplication.instance()
    app = (
        existing
        if isinstance(existing, QApplication)
        else QApplication(argv or sys.argv[:1])
    )
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationDisplayName(APP_TITLE)
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("harvest-gui")
    icon = resource_path("icons/harvest.svg")
    if icon is not None:
        app.setWindowIcon(QIcon(str(icon)))
    # High-DPI: Qt 6 scales by itself with the PassThrough rounding policy (QT-NOTES §2).
    return app


def resource_path(name: str) -> Path | None:
    """A file of the top-level resources/ folder, or None if this install lacks it.

    A wheel ships the folder inside the package (harvest_gui/resources); an
    editable install or a checkout has it beside the package.
    """
    here = Path(__file__).resolve().parent
    for folder in (here / "resources", here.parent / "resources"):
        if (folder / name).is_file():
            return folder / name
    return None


def demo_path() -> Path:
    """The demo workspace file in the user's data folder (created if missing)."""
    folder = Path(
        QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder / DEMO_FILE


def open_demo(window: MainWindow) -> bool:
    """Open the demo workspace as writer, registering and seeding the demo workflows."""
    from harvest_gui.demo.seed import seed
    from harvest_gui.session import WriterSession

    path = demo_path()
    if not window.open_path(path):
        return False
    session = window.session
    if isinstance(session, WriterSession):
        seed(session.runtime)
        session.refresh()
    return True


def show_error(window: MainWindow, exc: BaseException) -> QMessageBox | None:
    """Show an error met while the window works; the window stays usable.

    One box at a time (an error met on every poll must not stack boxes up);
    None when one is already showing.
    """
    shown = window.findChild(QMessageBox, "errorBox")
    if shown is not None and shown.isVisible():
        return None
    title, headline, detail = error_texts(exc)
    file_trouble = isinstance(exc, HarvestError)
    box = message_box(
        window,
        QMessageBox.Icon.Warning if file_trouble else QMessageBox.Icon.Critical,
        title,
        headline,
        detail,
    )
    box.setObjectName("errorBox")
    if not file_trouble:  # a bug: its traceback, for the report
        box.setDetailedText(
            "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        )
    window.last_dialog = box
    box.open()
    return box


def install_error_presenter(window: MainWindow) -> None:
    """Show unexpected errors in the window instead of a console traceback."""

    def present(exc: BaseException) -> None:
        show_error(window, exc)

    def hook(
        kind: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        if issubclass(kind, KeyboardInterrupt):
            QApplication.quit()
            return
        present(exc)

    async_bridge.set_error_presenter(present)
    sys.excepthook = hook


SIGNAL_CHECK_MS = 250
"""How often Python gets control to notice SIGTERM/SIGINT while Qt idles in C++."""


def stop_on_signals(window: MainWindow) -> None:
    """SIGTERM and SIGINT close the window the normal way (state saved, lock freed)."""

    def on_signal(_signum: int, _frame: object) -> None:
        QTimer.singleShot(0, window.close)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    # Python runs a signal handler only between bytecodes; a no-op timer makes sure
    # it gets the chance even when nothing else calls into Python.
    wake = QTimer(window)
    wake.setInterval(SIGNAL_CHECK_MS)
    wake.timeout.connect(lambda: None)
    wake.start()


def run(
    path: Target | None,
    read_only: bool,
    app_module: str | None,
    client: bool = False,
) -> int:
    """Start the window on the qasync loop and run until it closes."""
    from harvest_gui.views.main_window import MainWindow

    app = make_application()
    settings = Settings()
    theme.apply_theme(app, settings.theme())
    module = DEMO_APP if path is None else app_module
    if path is not None and app_module:  # said on the command line: it wins from now on
        settings.set_code_for(path, app_module)
    window = MainWindow(settings, app_module=module)
    install_error_presenter(window)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    loop.set_exception_handler(
        lambda _loop, context: async_bridge.present_error(
            context.get("exception") or RuntimeError(str(context.get("message")))
        )
    )
    window.show()
    if path is None:
        open_demo(window)
    else:
        window.open_path(path, read_only=read_only, client=client)

    # Quit only after the drive task has unwound (pitfall 6, qasync#39).
    app.setQuitOnLastWindowClosed(False)
    closed = asyncio.Event()
    window.closed.connect(closed.set)
    stop_on_signals(window)

    async def main() -> None:
        await closed.wait()
        unwinding = async_bridge.pending()
        if unwinding:
            await asyncio.wait(unwinding, timeout=5)
        leftover = async_bridge.cancel_all()
        if leftover:
            await asyncio.wait(leftover, timeout=1)

    with loop:
        loop.run_until_complete(main())
    return 0
