"""SignalDialog: send a signal to a run (names suggested from what it waits on, optional key)."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QComboBox, QLineEdit, QWidget

from harvest_gui.forms.commands import send_signal, workflow_info
from harvest_gui.forms.note_label import NoteLabel
from harvest_gui.forms.payload_editor import PayloadEditor
from harvest_gui.forms.run_form import RunActionDialog
from harvest_gui.inspect.formatting import json_text
from harvest_gui.inspect.signal_names import signal_types_in_code, suggest_signals


def signal_name_box(names: list[str]) -> QComboBox:
    """The signal's name: typed, or picked from `names` (the suggestions)."""
    box = QComboBox()
    box.setObjectName("signalNameCombo")
    box.setAccessibleName("Signal name")
    box.setEditable(True)
    box.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
    box.addItems(names)
    line_edit = box.lineEdit()
    if line_edit is not None:  # always: an editable combo has its line edit
        line_edit.setPlaceholderText("signal name")
    return box


class SignalDialog(RunActionDialog):
    """Stage a signal for one run.

    Signals:
        succeeded(bool): True when staged, False when the key was already used.
    """

    client_ok = True
    follows_tail = " and suggests its signal names"

    def __init__(
        self, session: Any, exec_id: str, parent: QWidget | None = None
    ) -> None:
        super().__init__(
            session, exec_id, "Send signal", "&Send", "signalDialog", parent
        )
        self.types: dict[str, Any] = {}
        self.last_payloads: dict[str, Any] = {}
        self.run_label = self.run_line
        self.name = signal_name_box(self._suggestions())
        self.payload = PayloadEditor("signalPayload", blank_is_null=False)
        self.key = QLineEdit()
        self.key.setObjectName("signalKeyEdit")
        self.key.setAccessibleName("Idempotency key")
        self.key.setPlaceholderText("optional: a second send with this key is dropped")
        self.closed_note = NoteLabel()
        self.closed_note.setObjectName("closedRunNote")
        self.add_run_rows()
        self.form.addRow("", self.closed_note)
        self._show_closed()
        self.form.addRow("&Name", self.name)
        self.form.addRow("&Payload", self.payload)
        self.form.addRow("Idempotency &key", self.key)
        self.name.currentTextChanged.connect(self.on_name_changed)
        self.payload.validity_changed.connect(lambda _ok: self.refresh_submit())
        self.on_name_changed(self.name.currentText())
        self.check_writable()
        self.refresh_submit()

    def _show_closed(self) -> None:
        """A closed run takes no signal (the engine refuses it): say so, and Send stays off."""
        closed = self.target.closed
        self.closed_note.setText(
            f"This run is closed ({self.target.state}): it takes no signals."
            if closed
            else ""
        )
        self.closed_note.setVisible(closed)

    def on_run_changed(self) -> None:
        """Suggest the new run's signal names; what was typed in the name stays."""
        self._show_closed()
        typed = self.name.currentText()
        self.types = {}
        self.last_payloads = {}
        self.name.blockSignals(True)
        self.name.clear()
        self.name.addItems(self._suggestions())
        self.name.setCurrentText(typed)
        self.name.blockSignals(False)
        self.on_name_changed(typed)

    def _suggestions(self) -> list[str]:
        try:
            detail = self.session.describe(self.exec_id)
            history = self.session.load_history(self.exec_id)
            staged = [s.name for s in self.session.staged_signals(self.exec_id)]
        except Exception:  # a purged run: the form still opens and the send reports it
            return []
        info = workflow_info(self.session, detail.workflow_name)
        self.types = signal_types_in_code(info.fn if info else None)
        for event in history:
            if event.type == "SignalReceived":
                self.last_payloads[str(event.attrs.get("name"))] = event.attrs.get(
                    "payload"
                )
        return suggest_signals(info.fn if info else None, history, staged)

    def on_name_changed(self, name: str) -> None:
        """Type the payload after the signal (fields for a dataclass) and offer a template.

        The template is the payload this run last received under the name, for a
        signal whose code declares no type.
        """
        name = name.strip()
        hint = self.types.get(name)
        if hint is not self.payload.hint:  # (re-typing would clear what was typed)
            self.payload.set_type(hint)
        if name in self.last_payloads:
            self.payload.set_template(
                json_text(self.last_payloads[name]),
                f"the payload of the last {name!r} signal",
            )
        else:
            self.payload.set_template("", "")
        self.refresh_submit()

    def can_submit(self) -> bool:
        """A name and a valid payload, for a run still open."""
        return (
            bool(self.name.currentText().strip())
            and self.payload.valid
            and not self.target.closed
        )

    def submit(self) -> Any:
        """Stage the signal."""
        parsed = self.payload.value()
        if not parsed.ok:
            raise ValueError(f"payload: {parsed.error}")
        name = self.name.currentText().strip()
        key = self.key.text().strip() or None

        def report(staged: bool) -> bool:
            if staged:
                self.show_result(
                    f"Signal {name!r} staged; the run takes it in on its next drive."
                )
            else:
                self.show_result(
                    f"Not staged: this run already received a signal with key {key!r}."
                )
            return staged

        return self.then(
            send_signal(self.session, self.exec_id, name, parsed.value, key), report
        )
