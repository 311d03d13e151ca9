"""A client command out to the serving process: a busy indicator, its command id, Withdraw on NotServed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QWidget

from harvest_engine import HarvestError
from harvest_gui.forms.note_label import NoteLabel

if TYPE_CHECKING:
    from harvest_engine import HarvestClient


class PendingCommand(QWidget):
    """Shown while a form's client command awaits its reply, and after it timed out.

    Without it a command waited up to its timeout with no sign of life
    (issue 31); the id is the one `harvest withdraw` and `client.withdraw`
    take, and Withdraw removes a command no process applied yet, so it
    does not run later when a server comes back.
    """

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("pendingCommand")
        self.command_id: str | None = None
        self._client: HarvestClient | None = None
        self.spinner = QProgressBar()
        self.spinner.setObjectName("commandSpinner")
        self.spinner.setRange(0, 0)  # no range: Qt's busy animation
        self.spinner.setTextVisible(False)
        self.spinner.setMaximumWidth(60)
        self.label = NoteLabel()
        self.label.setObjectName("commandStatus")
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.withdraw_button = QPushButton("Withdraw")
        self.withdraw_button.setObjectName("withdrawCommand")
        self.withdraw_button.setAutoDefault(False)
        self.withdraw_button.clicked.connect(self.withdraw)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.spinner)
        row.addWidget(self.label, 1)
        row.addWidget(self.withdraw_button)
        self.hide()

    def waiting(self, client: HarvestClient, command_id: str) -> None:
        """The command is out: spin and name it."""
        self._client, self.command_id = client, command_id
        self.label.setText(f"Waiting for the serving process… command {command_id}")
        self.spinner.show()
        self.withdraw_button.hide()
        self.show()

    def not_served(self) -> None:
        """No process serves the file: the command stays queued; offer to withdraw it."""
        self.spinner.hide()
        self.label.setText(
            f"Command {self.command_id} is queued, but no process serves the file: "
            "it runs when one does, unless withdrawn."
        )
        self.withdraw_button.show()
        self.withdraw_button.setEnabled(True)

    def done(self) -> None:
        """A reply came (or an error that is not NotServed): nothing pending."""
        self.hide()

    def withdraw(self) -> None:
        """Remove the command from the queue, or say it was applied after all."""
        client, cid = self._client, self.command_id
        if client is None or cid is None:
            return
        try:
            removed = client.withdraw(cid)
        except HarvestError as exc:
            self.label.setText(f"Could not withdraw command {cid}: {exc}")
            return
        self.withdraw_button.setEnabled(False)
        self.label.setText(
            f"Withdrawn: command {cid} will not run."
            if removed
            else f"Command {cid} was already applied (or is not queued): not withdrawn."
        )
