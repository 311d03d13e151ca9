"""Message boxes of the inspector: bad files, errors and About; opened with open(), never exec()."""

from __future__ import annotations

import platform
from typing import TYPE_CHECKING

import PySide6
from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import QMessageBox, QWidget

from harvest_engine import (
    DatabaseCorrupt,
    DatabaseLocked,
    HarvestError,
    HarvestInternalError,
    NotAHarvestDatabase,
    SchemaTooNew,
    StorageError,
)
from harvest_engine import (
    __version__ as engine_version,
)
from harvest_gui import __version__ as gui_version
from harvest_gui.inspect.formatting import breakable
from harvest_gui.target import display_name

if TYPE_CHECKING:
    from pathlib import Path

    from harvest_gui.session import Session
    from harvest_gui.target import Target


def message_box(
    parent: QWidget, icon: QMessageBox.Icon, title: str, text: str, detail: str = ""
) -> QMessageBox:
    """A window-modal box whose texts are plain (file names and errors are not HTML)."""
    # Long file names and error texts wrap (or are cut) instead of widening the box
    # past the screen.
    box = QMessageBox(
        icon, title, breakable(text), QMessageBox.StandardButton.Ok, parent
    )
    box.setObjectName("messageBox")
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setWindowModality(Qt.WindowModality.WindowModal)
    if detail:
        box.setInformativeText(breakable(detail))
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    return box


def open_error_text(path: Target, exc: BaseException) -> tuple[str, str]:
    """The headline and the explanation for a file that could not be opened."""
    name = display_name(path)
    if isinstance(exc, SchemaTooNew):
        return (
            f"{name} was written by a newer harvest.",
            f"{exc}\n\nThe file was left untouched. Open it with the harvest version that "
            "wrote it, or upgrade this one.",
        )
    if isinstance(exc, NotAHarvestDatabase):
        return (
            f"{name} is not a harvest database.",
            f"{exc}\n\nPick a file that a harvest runtime created. A damaged file "
            "(not readable as SQLite) is reported the same way.",
        )
    if isinstance(exc, DatabaseCorrupt):
        return (
            f"{name} is damaged: some of its pages cannot be read.",
            f"{exc}\n\nThe file that was open stays open, and this one was let go "
            "(no lock is kept). Open read-only to see what can still be read; a "
            "backup copy is the way to get the rest back.",
        )
    if isinstance(exc, HarvestInternalError):
        return (
            f"harvest hit an internal error opening {name}.",
            f"{exc}\n\nThis is a bug in harvest; please report it with this message.",
        )
    if isinstance(exc, (HarvestError, OSError, ImportError, ValueError)):
        return (f"{name} could not be opened.", str(exc))
    return (f"{name} could not be opened.", f"{type(exc).__name__}: {exc}")


def error_texts(exc: BaseException) -> tuple[str, str, str]:
    """(title, headline, explanation) for an error met while the window works.

    The file's own troubles (a full disk, a damaged page, a vanished file) are
    said as such: they are not bugs, and the window goes on. Anything else is
    an unexpected error, with its traceback for a report.
    """
    if isinstance(exc, DatabaseCorrupt):
        return (
            "Damaged file",
            "Part of the file is damaged.",
            f"{exc}\n\nThe rest of the file can still be read. Runs with damaged rows "
            "are marked in the list; a backup copy is the way to get their data back.",
        )
    if isinstance(exc, StorageError):
        return (
            "Storage problem",
            "The file could not be read or written.",
            f"{exc}\n\nNothing half-done was kept. Free some disk space or fix the "
            "file's permissions, then press F5 (Refresh) or reopen the file.",
        )
    if isinstance(exc, HarvestInternalError):
        return (
            "Unexpected error",
            str(exc) or type(exc).__name__,
            "This is a bug in harvest; please report it with this message.",
        )
    if isinstance(exc, HarvestError):
        return ("Cannot do that", str(exc) or type(exc).__name__, "")
    return (
        "Unexpected error",
        str(exc) or type(exc).__name__,
        "This is a bug in harvest inspector; please report it.",
    )


def locked_box(parent: QWidget, path: Path, exc: DatabaseLocked) -> QMessageBox:
    """Offer client mode (act through the process that serves it) or read-only mode."""
    holder = getattr(exc, "holder_pid", None)
    who = "another harvest writer" + ("" if holder is None else f" (process {holder})")
    box = message_box(
        parent,
        QMessageBox.Icon.Question,
        "File in use",
        f"{path.name} is open in {who}.",
        f"Only one writer at a time may open a harvest file (its lock file is "
        f"{getattr(exc, 'lock_path', path.name + '.lock')}).\n\nOpen it as a client? If that process serves the file "
        "(rt.serve(), a harvest inspector window), this window can start, signal, "
        "cancel, terminate, query and update its runs through it.\n\nOr open it "
        "read-only: the views follow the other writer live; nothing is written.",
    )
    box.setStandardButtons(
        QMessageBox.StandardButton.Open | QMessageBox.StandardButton.Cancel
    )
    box.button(QMessageBox.StandardButton.Open).setText("Open read-only")
    client = box.addButton("Open as client", QMessageBox.ButtonRole.YesRole)
    client.setObjectName("openAsClient")
    box.setDefaultButton(client)
    return box


def about_text(session: Session | None) -> str:
    """Versions of everything, plus the open file and its schema."""
    lines = [
        f"harvest inspector {gui_version}",
        f"harvest_engine {engine_version}",
        f"Qt {qVersion()}, PySide6 {PySide6.__version__}",
        f"Python {platform.python_version()} on {platform.system()}",
    ]
    if session is not None:
        lines.append(
            f"File: {session.name} (schema v{session.schema_version}, {session.mode})"
        )
    return "\n".join(lines)
