"""Message boxes of the inspector: bad files, errors and About; opened with open(), never exec()."""

from __future__ import annotations

import platform
from typing import TYPE_CHECKING

import PySide6
from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import QMessageBox, QWidget

from harvest_engine import (
    DatabaseLocked,
    HarvestError,
    HarvestInternalError,
    NotAHarvestDatabase,
    SchemaTooNew,
)
from harvest_engine import (
    __version__ as engine_version,
)
from harvest_gui import __version__ as gui_version
from harvest_gui.inspect.formatting import breakable

if TYPE_CHECKING:
    from pathlib import Path

    from harvest_gui.session import Session


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


def open_error_text(path: Path, exc: BaseException) -> tuple[str, str]:
    """The headline and the explanation for a file that could not be opened."""
    if isinstance(exc, SchemaTooNew):
        return (
            f"{path.name} was written by a newer harvest.",
            f"{exc}\n\nThe file was left untouched. Open it with the harvest version that "
            "wrote it, or upgrade this one.",
        )
    if isinstance(exc, NotAHarvestDatabase):
        return (
            f"{path.name} is not a harvest database.",
            f"{exc}\n\nPick a file that a harvest runtime created. A damaged file "
            "(not readable as SQLite) is reported the same way.",
        )
    if isinstance(exc, HarvestInternalError):
        return (
            f"harvest hit an internal error opening {path.name}.",
            f"{exc}\n\nThis is a bug in harvest; please report it with this message.",
        )
    if isinstance(exc, (HarvestError, OSError, ImportError, ValueError)):
        return (f"{path.name} could not be opened.", str(exc))
    return (f"{path.name} could not be opened.", f"{type(exc).__name__}: {exc}")


def locked_box(parent: QWidget, path: Path, exc: DatabaseLocked) -> QMessageBox:
    """Offer read-only mode for a file another writer holds."""
    box = message_box(
        parent,
        QMessageBox.Icon.Question,
        "File in use",
        f"{path.name} is open in another harvest writer.",
        f"{exc}\n\nOpen it read-only? The views will follow the other writer live; "
        "nothing will be written.",
    )
    box.setStandardButtons(
        QMessageBox.StandardButton.Open | QMessageBox.StandardButton.Cancel
    )
    box.button(QMessageBox.StandardButton.Open).setText("Open read-only")
    box.setDefaultButton(QMessageBox.StandardButton.Open)
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
            f"File: {session.path} (schema v{session.schema_version}, {session.mode})"
        )
    return "\n".join(lines)
