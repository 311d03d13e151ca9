"""ResetDialog: start a run again from an event of its history with today's code (`rt.reset`)."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from harvest_gui.forms.commands import reset_run
from harvest_gui.forms.note_label import NoteLabel
from harvest_gui.forms.run_form import RunActionDialog
from harvest_gui.inspect import formatting
from harvest_gui.inspect.reset_points import point_text
from harvest_gui.theme import error_style

DEFAULT_POINT = "the default point"
"""What event 0 means: before the last failed activity, or the last decision."""
NAME_CHARS = 60
"""The run's name in the confirmation is cut to this (a long id never widens the form)."""


class ResetDialog(RunActionDialog):
    """Reset one run to an event (the History tab's or time-travel slider's) with a reason; confirmed first.

    The old run ends TERMINATED if it still runs; the new run keeps the
    workflow id. The form says whether the event is a point a reset may
    start from before anything is confirmed, and the confirmation names the
    run. The submit button is never the default one.

    Signals:
        succeeded(str): the new run's exec id.
    """

    client_ok = True
    follows_tail = " (back to the default point) and clears its confirmation"

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
        self.submit_not_default()
        self.explain = NoteLabel(
            "Start the run again from an event with today's code: its history up to the "
            "event is kept, what follows is decided anew. A run still running ends "
            "TERMINATED; the new run keeps the workflow id."
        )
        self.explain.setObjectName("resetExplain")
        self.to_event = QSpinBox()
        self.to_event.setObjectName("resetToEvent")
        self.to_event.setAccessibleName("Reset to event")
        self.to_event.setRange(0, 2_000_000_000)
        self.to_event.setSpecialValueText(DEFAULT_POINT)
        self.to_event.setValue(to_event or 0)
        self.point_note = NoteLabel()
        self.point_note.setObjectName("resetPointNote")
        self.point_ok = True
        self.events: list[Any] = []
        self.events_of = ""
        """The run `events` belong to: a retarget starts the new run at its default point."""
        self.reason = QLineEdit()
        self.reason.setObjectName("reasonEdit")
        self.reason.setAccessibleName("Reason")
        self.reason.setPlaceholderText("why (recorded on the old run)")
        self.reason.textChanged.connect(lambda _t: self.refresh_submit())
        self.confirm = QCheckBox()
        self.confirm.setObjectName("confirmCheck")
        self.confirm.toggled.connect(lambda _c: self.refresh_submit())
        self.form.addRow(self.explain)
        self.add_run_rows()
        self.form.addRow("To &event", self.to_event)
        self.form.addRow("", self.point_note)
        self.form.addRow("&Reason", self.reason)
        self.form.addRow(self.confirm)
        self.to_event.valueChanged.connect(lambda _v: self.show_point())
        self.load_events()
        self.check_writable()
        self.refresh_submit()

    def first_field(self) -> QWidget | None:
        """The reason: the point came chosen (History tab or slider), the reason is to type."""
        if self.reason.isEnabled():
            return self.reason
        return super().first_field()

    def load_events(self) -> None:
        """Read the run's history, to say which events a reset may start from."""
        self.events_of = self.exec_id
        try:
            self.events = list(self.session.load_history(self.exec_id))
        except Exception:  # a purged run: the form opens; the reset reports it
            self.events = []
        self.show_point()

    def show_point(self) -> None:
        """Say what the chosen point keeps (or why a reset cannot start there); unconfirm."""
        seq = self.to_event.value()
        if not seq:
            self.point_ok = True
            note = (
                "The default point: just before the last failed activity's first "
                "attempt, else the run's last decision."
            )
        elif self.events:
            self.point_ok, note = point_text(self.events, seq)
        else:
            self.point_ok, note = True, ""
        self.point_note.setText(note)
        self.point_note.setStyleSheet("" if self.point_ok else error_style())
        point = f"event {seq}" if seq else DEFAULT_POINT
        name = formatting.middle(self.target.name, NAME_CHARS)
        ends = "" if self.target.closed else " ends TERMINATED and"
        self.confirm.setText(f"I understand {name}{ends} starts again from {point}")
        self.confirm.setChecked(False)
        self.refresh_submit()

    def on_run_changed(self) -> None:
        """Unconfirmed; another run starts at its default point (the event was the other run's)."""
        if self.events_of != self.exec_id:
            self.to_event.blockSignals(True)
            self.to_event.setValue(0)
            self.to_event.blockSignals(False)
        self.load_events()

    def can_submit(self) -> bool:
        """A reason, a point a reset may start from and the confirmation."""
        return (
            bool(self.reason.text().strip())
            and self.point_ok
            and self.confirm.isChecked()
        )

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
