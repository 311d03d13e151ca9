"""The dark theme: hint text is readable and a disabled input looks disabled."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QLabel, QLineEdit, QVBoxLayout, QWidget

from harvest_gui import theme

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.gui
Role, Group = QPalette.ColorRole, QPalette.ColorGroup


def luminance(c: QColor) -> float:
    def channel(v: float) -> float:
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    return (
        0.2126 * channel(c.redF())
        + 0.7152 * channel(c.greenF())
        + 0.0722 * channel(c.blueF())
    )


def contrast(a: QColor, b: QColor) -> float:
    """The WCAG contrast ratio (4.5 is the floor for body text)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.fixture
def dark(qapp: QApplication) -> Iterator[QApplication]:
    theme.apply_theme(qapp, "dark")
    yield qapp
    theme.apply_theme(qapp, "light")


def test_hint_text_in_the_dark_theme_is_readable(qtbot: Any, dark: Any) -> None:
    box = QWidget()
    qtbot.addWidget(box)
    field = QLineEdit()
    field.setPlaceholderText("workflow id prefix")
    hint = QLabel("Hints in forms use the palette's mid colour")
    hint.setStyleSheet("color: palette(mid);")
    layout = QVBoxLayout(box)
    layout.addWidget(field)
    layout.addWidget(hint)
    box.show()
    qtbot.waitExposed(box)
    p = field.palette()
    assert contrast(p.color(Role.PlaceholderText), p.color(Role.Base)) >= 4.5
    assert contrast(p.color(Role.PlaceholderText), p.color(Role.Window)) >= 4.5
    assert contrast(p.color(Role.Mid), p.color(Role.Window)) >= 4.5
    # As drawn: the darkest and lightest pixels of the hint label differ as text should.
    image = hint.grab().toImage()
    lights = {
        luminance(image.pixelColor(x, y))
        for x in range(0, image.width(), 2)
        for y in range(image.height())
    }
    assert (max(lights) + 0.05) / (min(lights) + 0.05) >= 4.5


def test_a_disabled_input_looks_disabled_in_the_dark_theme(
    qtbot: Any, dark: Any
) -> None:
    box = QWidget()
    qtbot.addWidget(box)
    on, off = QLineEdit("typed"), QLineEdit("typed")
    off.setEnabled(False)
    layout = QVBoxLayout(box)
    layout.addWidget(on)
    layout.addWidget(off)
    box.show()
    qtbot.waitExposed(box)

    def field_colour(w: QLineEdit) -> QColor:
        image = w.grab().toImage()  # a point inside the frame, right of the text
        return image.pixelColor(w.width() - 8, w.height() // 2)

    assert contrast(field_colour(on), field_colour(off)) >= 1.2
    p = off.palette()
    enabled = contrast(
        p.color(Group.Active, Role.Text), p.color(Group.Active, Role.Base)
    )
    disabled = contrast(
        p.color(Group.Disabled, Role.Text), p.color(Group.Disabled, Role.Base)
    )
    assert disabled < enabled / 2  # plainly greyed out
    assert disabled >= 2.0  # still legible


def test_a_forms_error_line_in_the_dark_theme_is_readable(
    qtbot: Any, dark: Any, tmp_path: Any
) -> None:
    """Found under Xvfb: the reset form's refusal was dark red on dark grey (2.4:1)."""
    from harvest_gui.forms.reset import ResetDialog
    from harvest_gui.session import WriterSession
    from tests.gui.helpers import make_runs

    path = tmp_path / "runs.db"
    (exec_id,) = make_runs(path, 1, finish=1)
    session = WriterSession.open(path, "tests.gui.helpers")
    try:
        form = ResetDialog(session, exec_id, 3)  # the run's end: no reset point
        qtbot.addWidget(form)
        form.show()
        form.show_error("an engine error")
        window = form.palette().color(Role.Window)
        for label in (form.point_note, form.error_label):
            assert label.text()
            colour = QColor(label.styleSheet().removeprefix("color: ").rstrip(";"))
            assert colour.isValid(), label.styleSheet()
            assert contrast(colour, window) >= 4.5, (label.objectName(), colour.name())
        form.close()
    finally:
        session.close()
