"""DemoBanner: the dismissable one-line "what to try" above the demo workspace's runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QStandardPaths, Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QToolButton

from harvest_gui.views.elided import ElidedLabel

if TYPE_CHECKING:
    from harvest_gui.settings import Settings
    from harvest_gui.target import Target

DEMO_FILE = "demo.harvest.db"
"""The demo workspace's file name in the data folder (as `app.DEMO_FILE` names it)."""
DISMISSED_KEY = "demo/banner_dismissed"
TEXT = (
    "Demo: 5 orders with a shipping child each, a report every minute. ORD-1003 waits "
    "for an “approve” (Run ▸ Send signal…); try a run's Timeline, Tools ▸ Crash-recovery demo."
)


def is_demo_file(path: Target) -> bool:
    """Whether `path` is the demo workspace `harvest-gui` opens without arguments."""
    if not isinstance(path, (str, Path)):
        return False
    folder = QStandardPaths.writableLocation(
        QStandardPaths.StandardLocation.AppDataLocation
    )
    try:
        return Path(path).resolve() == (Path(folder) / DEMO_FILE).resolve()
    except OSError:
        return False


class DemoBanner(QFrame):
    """What the demo holds and what to try; ✕ hides it for good (kept in QSettings)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.setObjectName("demoBanner")
        self.settings = settings
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = ElidedLabel("demoBannerText", Qt.TextElideMode.ElideRight)
        self.label.setText(TEXT)
        self.label.setToolTip(TEXT)
        self.close_button = QToolButton()
        self.close_button.setObjectName("demoBannerClose")
        self.close_button.setText("✕")
        self.close_button.setAccessibleName("Hide the demo hint")
        self.close_button.setToolTip("Hide this hint (it stays hidden)")
        self.close_button.clicked.connect(self.dismiss)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 2, 2, 2)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.close_button)

    @staticmethod
    def wanted(settings: Settings, path: Target) -> bool:
        """Whether to show the banner for `path`: the demo file, not dismissed before."""
        return is_demo_file(path) and settings.blob(DISMISSED_KEY) is None

    def dismiss(self) -> None:
        """Hide the banner and remember that it was dismissed."""
        self.settings.set_blob(DISMISSED_KEY, QByteArray(b"1"))
        self.hide()
