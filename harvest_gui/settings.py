"""The QSettings keys the inspector keeps: window state, splitters, recent files, theme."""

from __future__ import annotations

import hashlib
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

ORGANIZATION = "harvest"
APPLICATION = "harvest-gui"
MAX_RECENT = 10
THEMES = ("system", "light", "dark")


class Settings:
    """Typed access to the inspector's QSettings.

    Args:
        settings: the store to use; a plain `QSettings()` (the user's file)
            when omitted. Tests pass one backed by a file in `tmp_path`.

    """

    def __init__(self, settings: QSettings | None = None) -> None:
        self.qsettings = settings if settings is not None else QSettings()

    def recent_files(self) -> list[str]:
        """Recently opened files, newest first."""
        value = self.qsettings.value("recent_files", [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple):
            return []  # QSettings gives None for an empty list read back from an ini file
        return [str(v) for v in value if str(v)]

    def add_recent_file(self, path: str | Path) -> list[str]:
        """Put `path` first in the recent files (kept to 10); returns the new list."""
        text = str(Path(path).resolve())
        files = [text, *[f for f in self.recent_files() if f != text]][:MAX_RECENT]
        self.qsettings.setValue("recent_files", files)
        return files

    def clear_recent_files(self) -> None:
        """Forget every recent file."""
        self.qsettings.setValue("recent_files", [])

    def theme(self) -> str:
        """``system``, ``light`` or ``dark``."""
        value = str(self.qsettings.value("theme", "system"))
        return value if value in THEMES else "system"

    def set_theme(self, theme: str) -> None:
        """Remember the chosen theme."""
        self.qsettings.setValue("theme", theme if theme in THEMES else "system")

    def last_workflow(self) -> str:
        """The workflow the start form last started ("" when none yet)."""
        value = self.qsettings.value("start/last_workflow", "")
        return value if isinstance(value, str) else ""

    def set_last_workflow(self, name: str) -> None:
        """Remember the workflow just started, for the next start form."""
        self.qsettings.setValue("start/last_workflow", name)

    @staticmethod
    def _code_key(target: str | Path) -> str:
        text = str(target) if isinstance(target, str) and "://" in str(target) else None
        name = text or str(Path(target).resolve())
        return "code/" + hashlib.sha1(name.encode()).hexdigest()[:16]

    def code_for(self, target: str | Path) -> str | None:
        """The workflow code last loaded for this file (module name or .py path), or None."""
        value = self.qsettings.value(self._code_key(target))
        return value if isinstance(value, str) and value else None

    def set_code_for(self, target: str | Path, spec: str) -> None:
        """Remember `spec` as this file's workflow code, loaded when it opens again."""
        self.qsettings.setValue(self._code_key(target), spec)

    def blob(self, key: str) -> QByteArray | None:
        """A saved geometry/state blob, or None."""
        value = self.qsettings.value(key)
        return value if isinstance(value, QByteArray) and not value.isEmpty() else None

    def set_blob(self, key: str, value: QByteArray) -> None:
        """Save a geometry/state blob."""
        self.qsettings.setValue(key, value)

    def sync(self) -> None:
        """Write pending changes to disk."""
        self.qsettings.sync()
