"""FileOpener: turns a chosen file into an open session, or says in the window why it cannot."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFileDialog, QMessageBox

from harvest_engine import DatabaseCorrupt, DatabaseLocked
from harvest_gui.client_session import ClientSession
from harvest_gui.forms.load_code import LoadCodeDialog
from harvest_gui.session import ReaderSession, Session, WriterSession
from harvest_gui.views.dialogs import locked_box, message_box, open_error_text

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance
    from PySide6.QtWidgets import QAbstractButton, QWidget

    from harvest_gui.settings import Settings
    from harvest_gui.target import Target
    from harvest_gui.views.status_bar import InspectorStatusBar
    from harvest_gui.views.welcome_page import WelcomePage

FILE_FILTER = "harvest databases (*.db *.sqlite *.sqlite3 *.harvest);;All files (*)"


class OpeningHost(Protocol):
    """The inspector window as its file opener sees it."""

    @property
    def settings(self) -> Settings:
        """Where the workflow code remembered for each file lives."""

    @property
    def app_module(self) -> str | None:
        """The `--app` module, loaded into a file that remembers no code of its own."""

    @property
    def session(self) -> Session | None:
        """The open file, or None."""

    @property
    def status(self) -> InspectorStatusBar:
        """The status bar."""

    @property
    def welcome(self) -> WelcomePage:
        """The page shown while no file is open, which repeats why one did not open."""

    @property
    def context_changed(self) -> SignalInstance:
        """Emitted when the open file changes (here: the code it runs)."""

    def set_session(self, session: Session) -> None:
        """Show `session`, closing the one shown before (raises if its rows cannot be read)."""

    def show_dialog(self, box: QMessageBox) -> None:
        """Open `box` (non-modal) and keep it as the window's last dialog."""

    def window(self) -> QWidget:
        """The window as a widget: parent of the dialogs opened here."""


class FileOpener:
    """Opens files as writer, read-only or client, and loads workflow code into them.

    Errors become dialogs, never tracebacks.

    Args:
        host: the inspector window.

    """

    def __init__(self, host: OpeningHost) -> None:
        self.host = host
        self.code_dialog: LoadCodeDialog | None = None
        """The open File ▸ Load workflow code… dialog, raised when asked for again."""

    def on_open(self, read_only: bool) -> None:
        """Ask for a file (non-blocking dialog), then open it."""
        dialog = QFileDialog(
            self.host.window(),
            "Open harvest file read-only" if read_only else "Open harvest file",
        )
        dialog.setObjectName("openDialog")
        dialog.setNameFilter(FILE_FILTER)
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(
            lambda p: self.open_path(Path(p), read_only=read_only)
        )
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()

    def open_path(
        self, path: Target, read_only: bool = False, client: bool = False
    ) -> bool:
        """Open `path` as writer, or `read_only`, or as a `client` of the process serving it.

        Errors become dialogs, never tracebacks; a file another writer holds
        offers client and read-only mode.

        Returns:
            True when the file is now open.

        """
        code = self.code_for(path)
        try:
            session: Session
            try:
                session = self._open_session(path, read_only, client, code)
            except (ImportError, ValueError) as exc:
                if code is None or code == self.host.app_module:
                    raise
                # Code remembered for the file that no longer loads: open without it.
                session = self._open_session(path, read_only, client, None)
                self.host.status.say(
                    f"The workflow code remembered for this file did not load "
                    f"({exc}); opened without it (File ▸ Load workflow code…).",
                    15000,
                )
        except DatabaseLocked as exc:  # only a file has a writer lock
            file = Path(path)
            box = locked_box(self.host.window(), file, exc)
            box.buttonClicked.connect(
                lambda button: self._on_locked_choice(file, box, button)
            )
            self.host.show_dialog(box)
            return False
        except Exception as exc:  # every failure is explained in the window
            self._show_open_error(path, exc, offer_read_only=not (read_only or client))
            return False
        try:
            self.host.set_session(session)
        except Exception as exc:  # opened, but its rows cannot be read (a damaged page)
            # The file that was open stays open; this one lets its lock go at once.
            session.close()
            self._show_open_error(path, exc, offer_read_only=not (read_only or client))
            return False
        return True

    def code_for(self, path: Target) -> str | None:
        """The workflow code to load with `path`: the one remembered for it, else `--app`."""
        return self.host.settings.code_for(path) or self.host.app_module

    @staticmethod
    def _open_session(
        path: Target, read_only: bool, client: bool, code: str | None
    ) -> Session:
        if client:
            return ClientSession.open(path, code)
        if read_only:
            return ReaderSession.open(path, code)
        return WriterSession.open(path, code)

    def _show_open_error(
        self, path: Target, exc: BaseException, *, offer_read_only: bool
    ) -> None:
        """Say why `path` did not open; a damaged file may still read read-only."""
        headline, detail = open_error_text(path, exc)
        self.host.welcome.message.setText(f"{headline}\n{detail.splitlines()[0]}")
        box = message_box(
            self.host.window(),
            QMessageBox.Icon.Warning,
            "Cannot open file",
            headline,
            detail,
        )
        if offer_read_only and isinstance(exc, DatabaseCorrupt):
            button = box.addButton("Open read-only", QMessageBox.ButtonRole.ActionRole)
            button.setObjectName("openReadOnly")
            button.clicked.connect(lambda: self.open_path(path, read_only=True))
        self.host.show_dialog(box)

    def _on_locked_choice(
        self, path: Path, box: QMessageBox, button: QAbstractButton
    ) -> None:
        if button.objectName() == "openAsClient":
            self.open_path(path, client=True)
        elif button is box.button(QMessageBox.StandardButton.Open):
            self.open_path(path, read_only=True)

    # -- workflow code ------------------------------------------------------------------

    def on_load_code(self) -> None:
        """File ▸ Load workflow code…: one dialog, raised if already open."""
        session = self.host.session
        if session is None:
            self.host.status.say("Open a file first (Ctrl+O).")
            return
        shown = self.code_dialog
        if shown is not None and shown.isVisible():
            shown.raise_()
            shown.activateWindow()
            return
        dialog = LoadCodeDialog(
            session, self.load_code, session.code_module, self.host.window()
        )
        self.code_dialog = dialog
        dialog.show()

    def close_code_dialog(self) -> None:
        """The file closes: the dialog that loads into it goes with it."""
        if self.code_dialog is not None:
            self.code_dialog.close()
            self.code_dialog = None

    def load_code(self, spec: str) -> str:
        """Load workflow code into the open file, remember it for the file; says what came.

        Raises:
            ImportError, ValueError: the code does not load (nothing changes).
        """
        session = self.host.session
        if session is None:
            raise ValueError("no file is open")
        names = session.load_code(spec)  # type: ignore[attr-defined]
        self.host.settings.set_code_for(session.path, spec)
        if isinstance(session, WriterSession):
            self.start_driving(session)  # runs waiting for their code go on
        session.refresh()
        self.host.context_changed.emit()
        listed = ", ".join(names) if names else "no workflows"
        return f"Loaded {spec}: {listed}. Remembered for {session.name}."

    def start_driving(self, session: WriterSession) -> None:
        """Drive `session`'s runs, now or as soon as the qasync loop runs."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            # No loop runs yet (app start-up): start when the qasync loop does.
            QTimer.singleShot(0, lambda: self._start_if_current(session))
            return
        session.start_driving()

    def _start_if_current(self, session: WriterSession) -> None:
        if self.host.session is session and not session.closed:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return
            session.start_driving()
