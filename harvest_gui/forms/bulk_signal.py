"""BulkSignalDialog: one signal (a name and a JSON payload) to every open run the list's filter matches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_gui.forms.bulk import BulkRunsDialog
from harvest_gui.forms.commands import signal_many, workflow_info
from harvest_gui.forms.payload_editor import PayloadEditor
from harvest_gui.forms.signal import signal_name_box
from harvest_gui.inspect import formatting
from harvest_gui.inspect.signal_names import signal_types_in_code, signals_in_code

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from harvest_engine import ExecutionFilter


class BulkSignalDialog(BulkRunsDialog):
    """Signal every open run the filter matches once (`signal_many`), named and counted first.

    The signal names the matching runs' code waits on are offered; the
    payload is checked as typed (one field per attribute for a signal the
    code reads as a dataclass). Sending the same signal again stages nothing
    twice: the engine keys each bulk signal by its name and payload.

    Signals:
        succeeded(int): how many runs took the signal.
    """

    def __init__(
        self,
        session: Any,
        flt: ExecutionFilter,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(session, flt, "signal", parent)
        self.name.currentTextChanged.connect(self.on_name_changed)
        self.payload.validity_changed.connect(lambda _ok: self.refresh_submit())
        self.on_name_changed(self.name.currentText())

    def add_fields(self, takes_reason: bool) -> None:
        """The signal's name (suggested from the runs' code) and its payload."""
        self.types: dict[str, Any] = {}
        self.name = signal_name_box(self._suggestions())
        self.payload = PayloadEditor("signalPayload", blank_is_null=False)
        self.form.addRow("&Name", self.name)
        self.form.addRow("&Payload", self.payload)

    def _suggestions(self) -> list[str]:
        """The signals the matching runs' workflows read, from their registered code."""
        names: list[str] = []
        for wf in sorted({r.workflow_name for r in self.runs}):
            info = workflow_info(self.session, wf)
            fn = info.fn if info is not None else None
            for name, hint in signal_types_in_code(fn).items():
                self.types.setdefault(name, hint)
            names += [n for n in signals_in_code(fn) if n not in names]
        return names

    def on_name_changed(self, name: str) -> None:
        """Check the payload against the type the code reads that signal as."""
        hint = self.types.get(name.strip())
        if hint is not self.payload.hint:
            self.payload.set_type(hint)
        self.confirm.setChecked(False)  # confirmed for another signal
        self.refresh_submit()

    def can_submit(self) -> bool:
        """A name, a valid payload, a matching run and the confirmation."""
        return (
            bool(self.name.currentText().strip())
            and self.payload.valid
            and super().can_submit()
        )

    def submit(self) -> Any:
        """Send the signal to every matching run; say how many took it."""
        parsed = self.payload.value()
        if not parsed.ok:
            raise ValueError(f"payload: {parsed.error}")
        name = self.name.currentText().strip()

        def report(changed: int) -> int:
            self.show_result(
                f"Signal {name!r}: {formatting.count(changed, 'run')} took it."
            )
            self.confirm.setChecked(False)
            return changed

        return self.then(
            signal_many(self.session, self.flt, name, parsed.value), report
        )
