"""The application object: identity and the window icon from resources/."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_gui.app import make_application, resource_path

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication


def test_the_application_carries_its_name_and_the_harvest_icon(
    qapp: QApplication,
) -> None:
    app = make_application()

    assert app is qapp
    assert app.applicationName() == "harvest-gui"
    icon = app.windowIcon()
    assert not icon.isNull()
    assert not icon.pixmap(64, 64).isNull()  # the SVG renders


def test_a_missing_resource_is_none_not_an_error() -> None:
    found = resource_path("icons/harvest.svg")
    assert found is not None
    assert found.name == "harvest.svg"
    assert resource_path("icons/no-such-icon.svg") is None
