"""The signal form on a closed run says it takes no signals, and Send stays off (the engine would refuse)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from harvest_gui.forms.signal import SignalDialog
from harvest_gui.session import WriterSession
from tests.gui.helpers import make_runs

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.gui


def test_send_is_off_for_a_closed_run_and_on_again_for_an_open_one(
    qtbot: Any, tmp_path: Path
) -> None:
    path = tmp_path / "runs.db"
    done, open_run = make_runs(path, 2, finish=1)
    session = WriterSession.open(path, "tests.gui.helpers")
    try:
        form = SignalDialog(session, done)
        qtbot.addWidget(form)
        form.show()
        form.name.setCurrentText("go")
        form.payload.set_text('"now"')
        assert not form.submit_button.isEnabled()
        assert not form.closed_note.isHidden()
        assert form.closed_note.text() == (
            "This run is closed (COMPLETED): it takes no signals."
        )
        form.retarget(open_run)  # the main window's selection moved
        assert form.closed_note.isHidden()
        assert form.submit_button.isEnabled()
    finally:
        session.close()
