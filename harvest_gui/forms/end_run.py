"""EndRunDialog: cancel, terminate, pause or unpause a run, with a reason and a confirmation."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QCheckBox, QLineEdit, QWidget

from harvest_gui.forms.commands import end_run
from harvest_gui.forms.note_label import NoteLabel
from harvest_gui.forms.run_form import RunActionDialog, read_target

TEXTS = {
    "cancel": (
        "Cancel run",
        "&Cancel run",
        "Ask the run to stop: its code sees the request, may run clean-up steps, then ends "
        "CANCELLED.",
        "I understand the run will be asked to stop",
    ),
    "terminate": (
        "Terminate run",
        "&Terminate run",
        "End the run at once: no clean-up runs, pending activities and timers are dropped, it "
        "ends TERMINATED.",
        "I understand the run ends now, without clean-up",
    ),
    "pause": (
        "Pause run",
        "&Pause run",
        "Hold the run: it takes no decision and starts no attempt until unpaused; attempts "
        "already running finish, and signals and timers that come meanwhile wait.",
        "I understand the run holds until it is unpaused",
    ),
    "unpause": (
        "Unpause run",
        "&Unpause run",
        "Let the paused run go on from where it stood: what came while it was paused applies now.",
        "Let it go on",
    ),
}
DONE = {
    "cancel": "Cancel requested",
    "terminate": "Run terminated",
    "pause": "Run paused",
    "unpause": "Run unpaused",
}


class EndRunDialog(RunActionDialog):
    """Cancel, terminate, pause or unpause one run; the submit button waits for the confirmation box.

    Signals:
        succeeded(str): the action that was taken (``cancel``, ``terminate``, ``pause``, ``unpause``).
    """

    client_ok = True
    follows_tail = " and clears its confirmation"

    def __init__(
        self, session: Any, exec_id: str, action: str, parent: QWidget | None = None
    ) -> None:
        title, submit, explain, confirm = TEXTS[action]
        super().__init__(session, exec_id, title, submit, f"{action}RunDialog", parent)
        self.action = action
        self.reason = QLineEdit()
        self.reason.setObjectName("reasonEdit")
        self.reason.setAccessibleName("Reason")
        self.reason.setPlaceholderText("why (blank: a default text is recorded)")
        self.confirm = QCheckBox(confirm)
        self.confirm.setObjectName("confirmCheck")
        self.confirm.toggled.connect(lambda _c: self.refresh_submit())
        self.explain = NoteLabel(explain)
        self.explain.setObjectName("endRunExplain")
        self.closed_note = NoteLabel()
        self.closed_note.setObjectName("closedRunNote")
        self.form.addRow(self.explain)
        self.add_run_rows()
        self.form.addRow("", self.closed_note)
        if action != "unpause":  # the engine records no reason for an unpause
            self.form.addRow("&Reason", self.reason)
        self.form.addRow(self.confirm)
        self.check_writable()
        self.on_run_changed()

    def on_run_changed(self) -> None:
        """A closed run has nothing to end: say so before anything is confirmed."""
        self.confirm.setChecked(False)
        closed = self.target.closed
        self.closed_note.setText(
            f"This run is closed ({self.target.state}): there is nothing to "
            f"{self.action}."
            if closed
            else ""
        )
        self.closed_note.setVisible(closed)
        self.confirm.setEnabled(not closed and self.disabled_reason is None)
        self.refresh_submit()

    def can_submit(self) -> bool:
        """Only once confirmed, and only for a run still open."""
        return self.confirm.isChecked() and not self.target.closed

    def submit(self) -> Any:
        """End the run."""

        def report(_: None) -> str:
            self.show_result(f"{DONE[self.action]}: {self.target.text}")
            self.target = read_target(self.session, self.exec_id)
            self._show_target()
            self.on_run_changed()
            return self.action

        return self.then(
            end_run(
                self.session, self.exec_id, self.action, self.reason.text().strip()
            ),
            report,
        )
