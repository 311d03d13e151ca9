"""QueryDialog and UpdateDialog: call a run's query or update handler and show the answer."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QComboBox, QWidget

from harvest_gui.async_bridge import async_slot
from harvest_gui.forms.commands import (
    handler_input_type,
    handler_names,
    run_query,
    run_update,
)
from harvest_gui.forms.payload_editor import PayloadEditor
from harvest_gui.forms.run_form import RunActionDialog
from harvest_gui.inspect.formatting import json_text


class HandlerCallDialog(RunActionDialog):
    """Shared form of queries and updates: a handler name, an argument, the answer.

    Signals:
        succeeded(object): the handler's result.
    """

    client_ok = True
    follows_tail = " and offers its handler names"

    kind = "query"

    def __init__(
        self,
        session: Any,
        exec_id: str,
        title: str,
        submit: str,
        name: str,
        parent: QWidget | None,
    ) -> None:
        super().__init__(session, exec_id, title, submit, name, parent)
        # A purged run has no name: the call itself reports ExecutionNotFound.
        self.workflow_name = self.target.workflow_name
        self.run_label = self.run_line
        self.name = QComboBox()
        self.name.setObjectName(f"{self.kind}NameCombo")
        self.name.setAccessibleName(f"{self.kind.title()} name")
        self.name.setEditable(True)
        self.name.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.name.addItems(handler_names(session, self.workflow_name, self.kind))
        self.arg = PayloadEditor(f"{self.kind}Arg")
        self.add_run_rows()
        self.form.addRow("&Name", self.name)
        self.form.addRow("&Argument", self.arg)
        self.name.currentTextChanged.connect(self.on_name_changed)
        self.arg.validity_changed.connect(lambda _ok: self.refresh_submit())
        self.on_name_changed(self.name.currentText())
        self.check_writable()
        self.refresh_submit()

    def on_run_changed(self) -> None:
        """Offer the new run's handler names; what was typed in the name stays."""
        self.workflow_name = self.target.workflow_name
        typed = self.name.currentText()
        self.name.blockSignals(True)
        self.name.clear()
        self.name.addItems(handler_names(self.session, self.workflow_name, self.kind))
        self.name.setCurrentText(typed)
        self.name.blockSignals(False)
        self.on_name_changed(typed)

    def on_name_changed(self, name: str) -> None:
        """Type the argument after the handler's annotation."""
        self.arg.set_type(
            handler_input_type(self.session, self.workflow_name, self.kind, name)
        )
        self.refresh_submit()

    def can_submit(self) -> bool:
        """A name and a valid argument."""
        return bool(self.name.currentText().strip()) and self.arg.valid

    async def call(self, name: str, arg: Any) -> Any:
        """Ask the engine (subclasses pick query or update)."""
        return await run_query(self.session, self.exec_id, name, arg)

    @async_slot()
    async def on_submit_clicked(self) -> None:
        """Call the handler on the loop; the answer or the typed error lands in the form."""
        self.clear_messages()
        parsed = self.arg.value()
        if not parsed.ok:
            self.show_error(f"argument: {parsed.error}")
            return
        self.set_busy(True)
        try:
            result = await self.call(self.name.currentText().strip(), parsed.value)
        except Exception as exc:  # typed engine errors are shown, in words
            self.show_error(exc)
            return
        finally:
            self.set_busy(False)
        self.show_result(json_text(result))
        self.succeeded.emit(result)


class QueryDialog(HandlerCallDialog):
    """Run a query at the run's frontier (writes nothing)."""

    kind = "query"

    def __init__(
        self, session: Any, exec_id: str, parent: QWidget | None = None
    ) -> None:
        super().__init__(session, exec_id, "Run query", "&Query", "queryDialog", parent)


class UpdateDialog(HandlerCallDialog):
    """Run an update: validated, then recorded with its result."""

    kind = "update"

    def __init__(
        self, session: Any, exec_id: str, parent: QWidget | None = None
    ) -> None:
        super().__init__(
            session, exec_id, "Run update", "&Update", "updateDialog", parent
        )

    async def call(self, name: str, arg: Any) -> Any:
        """Run the update."""
        return await run_update(self.session, self.exec_id, name, arg)
