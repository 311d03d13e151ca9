"""ResetDialog: start a run again from an event of its history with today's code (`rt.reset`)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from harvest_gui.forms.commands import reset_run
from harvest_gui.forms.run_form import RunActionDialog

DEFAULT_POINT = "the default point"
"""What event 0 means: before the last failed activity, or the last decision."""


class ResetDialog(RunActionDialog):
    """Reset one run to an event (the History tab's selection) with a reason; confirmed first.

    The old run ends TERMINATED if it still runs; the new run keeps the
    workflow id. The submit button is never the default one.

    Signals:
        succeeded(str): the new run's exec id.
    """

    client_ok = True

    def __init__(
        self,
        session: Any,
        exec_id: str,
        to_event: int | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(
            session, exec_id, "Reset run", "&Reset run", "resetRunDialog", parent
        )
        self.buttons.removeButton(self.submit_button)
        self.buttons.addButton(
            self.submit_button, QDialogButtonBox.ButtonRole.ActionRole
        )
        self.submit_button.setDefault(False)
        self.submit_button.setAutoDefault(False)
        self.explain = QLabel(
            "Start the run again from an event with today's code: its history up to the "
            "event is kept, what follows is decided anew. A run still running ends "
            "TERMINATED; the new run keeps the workflow id."
        )
        self.explain.setObjectName("resetExplain")
        self.explain.setTextFormat(Qt.TextFormat.PlainText)
        self.explain.setWordWrap(True)
        self.to_event = QSpinBox()
        self.to_event.setObjectName("resetToEvent")
        self.to_event.setAccessibleName("Reset to event")
        self.to_event.setRange(0, 2_000_000_000)
        self.to_event.setSpecialValueText(DEFAULT_POINT)
        self.to_event.setValue(to_event or 0)
        self.reason = QLineEdit()
        self.reason.setObjectName("reasonEdit")
        self.reason.setAccessibleName("Reason")
        self.reason.setPlaceholderText("why (recorded on the old run)")
        self.reason.textChanged.connect(lambda _t: self.refresh_submit())
        self.confirm = QCheckBox("I understand a running run ends and a new one starts")
        self.confirm.setObjectName("confirmCheck")
        self.confirm.toggled.connect(lambda _c: self.refresh_submit())
        self.form.addRow(self.explain)
        self.add_run_rows()
        self.form.addRow("To &event", self.to_event)
        self.form.addRow("&Reason", self.reason)
        self.form.addRow(self.confirm)
        self.check_writable()
        self.refresh_submit()

    def on_run_changed(self) -> None:
        """Another run: nothing stays confirmed."""
        self.confirm.setChecked(False)
        self.refresh_submit()

    def can_submit(self) -> bool:
        """A reason and the confirmation."""
        return bool(self.reason.text().strip()) and self.confirm.isChecked()

    def submit(self) -> Any:
        """Reset; name the new run."""
        seq = self.to_event.value() or None

        def report(new_id: Any) -> str:
            point = f"event {seq}" if seq else DEFAULT_POINT
            self.show_result(
                f"Reset {self.target.text} to {point}: the new run is {new_id}."
            )
            self.confirm.setChecked(False)
            return str(new_id)

        return self.then(
            reset_run(self.session, self.exec_id, seq, self.reason.text().strip()),
            report,
        )
