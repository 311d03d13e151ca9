"""Long texts are cut where the user can tell (never mid-word with no sign) and widen nothing."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtWidgets import QMainWindow

from harvest_gui.views.elided import ElidedLabel
from harvest_gui.views.status_bar import InspectorStatusBar, fit_words

pytestmark = pytest.mark.gui


def test_fit_words_ends_at_a_word_with_an_ellipsis() -> None:
    text = "Run until blocked stopped: the activity charge_card raised CardDeclined"
    shown = fit_words(text, len, 40)
    assert shown.endswith(" …")
    assert text.startswith(shown[:-2])
    assert text[len(shown) - 2] == " "  # the cut falls between two words
    assert fit_words("short", len, 40) == "short"


@pytest.fixture
def window(qtbot: Any) -> QMainWindow:
    window = QMainWindow()
    qtbot.addWidget(window)
    return window


@pytest.fixture
def bar(qtbot: Any, window: QMainWindow) -> InspectorStatusBar:
    bar = InspectorStatusBar()
    window.setStatusBar(bar)
    window.resize(900, 300)
    window.show()
    qtbot.waitExposed(window)
    bar.mode.setText("writer")
    bar.file.setText("/home/someone/.local/share/harvest/harvest-gui/demo.harvest.db")
    bar.lock.setText("lock: held by this window (demo.harvest.db.lock)")
    bar.refresh.setText("refreshed 12:00:01")
    return bar


def test_a_status_message_gets_the_room_of_the_file_and_lock_fields(
    qtbot: Any, bar: InspectorStatusBar
) -> None:
    message = "3b0e4a6e-7f3c-4a55-9bbd-6f3d1b0f8a11: waiting for signal 'approve'"
    bar.say(message, 10_000)
    assert bar.currentMessage() == message
    bar.clearMessage()
    assert bar.file.maximumWidth() > 10_000  # the fields take their room back


def test_a_status_message_too_long_for_the_window_ends_at_a_word(
    qtbot: Any, bar: InspectorStatusBar
) -> None:
    message = "Drive: " + " ".join(["CardDeclined: the card was declined"] * 12)
    bar.say(message, 10_000)
    shown = bar.currentMessage()
    assert shown.endswith(" …")
    assert message.startswith(shown[:-2])
    assert message[len(shown) - 2] == " "
    assert "CardDeclined: the card was declined" in bar.toolTip()


def test_an_elided_label_never_asks_for_its_whole_text_as_minimum(qtbot: Any) -> None:
    label = ElidedLabel("x")
    qtbot.addWidget(label)
    label.setText("w" * 1_000_000)
    assert len(label.text()) < 1_000  # a megabyte never reaches the widget
    assert label.minimumSizeHint().width() < 100
    label.resize(200, 20)
    label.show()
    assert label.shown_text().endswith("…")
    assert "1,000,000 characters" in label.text()
