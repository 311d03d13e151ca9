"""Form rows are as tall as what they show: no blank line under a note, no gap under typed fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from PySide6.QtWidgets import QVBoxLayout, QWidget

from harvest_gui.forms.payload_editor import PayloadEditor
from harvest_gui.forms.signal import SignalDialog
from harvest_gui.session import WriterSession
from tests.gui.helpers import make_runs

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.gui


@dataclass
class Approval:
    approved: bool
    by: str


def test_a_wrapped_note_is_as_tall_as_its_text_at_its_width(
    qtbot: Any, tmp_path: Path
) -> None:
    path = tmp_path / "runs.db"
    [run] = make_runs(path, 1)
    session = WriterSession.open(path, "tests.gui.helpers")
    try:
        form = SignalDialog(session, run)
        qtbot.addWidget(form)
        form.show()
        qtbot.waitExposed(form)
        for width in (700, 480):  # wider than its hint, then back
            form.resize(width, form.height())
            note = form.follows
            qtbot.waitUntil(
                lambda n=note: n.height() == n.heightForWidth(n.width()), timeout=2000
            )
        # Three lines at this width; laid out at its hint's width it took four.
        assert note.height() < note.heightForWidth(note.sizeHint().width())
    finally:
        session.close()


def test_typed_fields_take_their_own_height_not_the_raw_boxs(qtbot: Any) -> None:
    host = QWidget()
    qtbot.addWidget(host)
    editor = PayloadEditor("payload")
    QVBoxLayout(host).addWidget(editor)
    editor.set_type(Approval)
    host.show()
    qtbot.waitExposed(host)
    fields = editor.fields_page.sizeHint().height()
    assert editor.field_mode
    assert editor.stack.sizeHint().height() == fields
    assert editor.stack.height() <= fields + 2
    host.resize(host.width(), 400)  # room to spare never goes under the fields
    qtbot.waitUntil(lambda: host.height() == 400)
    assert editor.height() <= editor.sizeHint().height()
    editor.raw_toggle.setChecked(True)  # the raw box is back at its own height
    qtbot.waitUntil(lambda: editor.stack.height() >= editor.raw.minimumHeight())
    editor.raw_toggle.setChecked(False)
    assert editor.stack.sizeHint().height() == fields


def test_the_raw_box_leaves_no_gap_under_it(qtbot: Any) -> None:
    host = QWidget()
    qtbot.addWidget(host)
    editor = PayloadEditor("payload")
    QVBoxLayout(host).addWidget(editor)
    host.resize(480, 500)  # room to spare
    host.show()
    qtbot.waitExposed(host)
    assert not editor.field_mode
    # The stack's hint is the box's (192 px), past the box's maximum (150 px).
    assert editor.stack.height() == editor.raw.height() == editor.raw.maximumHeight()
