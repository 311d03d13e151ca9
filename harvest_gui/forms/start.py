"""StartWorkflowDialog: pick a registered workflow, type its input, id, reuse policy, memo, attributes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLineEdit, QWidget

from harvest_engine import ExecutionFilter, HarvestError, WorkflowIdReusePolicy
from harvest_gui.forms.base import ActionDialog
from harvest_gui.forms.commands import (
    NO_CODE_REASON,
    StartRequest,
    client_of,
    start_workflow,
    workflow_info,
    workflow_infos,
)
from harvest_gui.forms.payload_editor import PayloadEditor
from harvest_gui.forms.run_form import read_target
from harvest_gui.inspect.formatting import json_text

if TYPE_CHECKING:
    from harvest_engine import StartOutcome
    from harvest_gui.settings import Settings

BY_NAME_NOTE = (
    "No workflow code is loaded in this window: type the workflow's name and its "
    "input as JSON; the serving process runs it. (File ▸ Load workflow code… adds "
    "names and typed inputs.)"
)
REUSE_HELP = {
    WorkflowIdReusePolicy.ALLOW_DUPLICATE: "attach to a running run of the id; else start fresh",
    WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY: "refuse after a completed run of the id",
    WorkflowIdReusePolicy.REJECT_DUPLICATE: "refuse if any run of the id exists",
    WorkflowIdReusePolicy.TERMINATE_IF_RUNNING: "replace a running run of the id",
}


class StartWorkflowDialog(ActionDialog):
    """Start a run of a registered workflow.

    Signals:
        succeeded(StartOutcome): the run started (or attached to a running one).
    """

    client_ok = True

    def __init__(
        self,
        session: Any,
        parent: QWidget | None = None,
        settings: Settings | None = None,
    ) -> None:
        super().__init__(
            session, "Start workflow", "&Start", "startWorkflowDialog", parent
        )
        self.settings = settings
        """Where the last workflow started is remembered (None: not remembered)."""
        self.workflow = QComboBox()
        self.workflow.setObjectName("workflowCombo")
        self.workflow.setAccessibleName("Workflow")
        for info in workflow_infos(session):
            self.workflow.addItem(info.name)
        self.by_name = self.workflow.count() == 0 and client_of(session) is not None
        """Client mode without code: the serving process has it; start by typed name."""
        if self.by_name:
            self.workflow.setEditable(True)
            self.workflow.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
            self.workflow.addItems(self.names_in_file())
            line = self.workflow.lineEdit()
            if line is not None:  # always: setEditable(True) gave it one
                line.setPlaceholderText("the workflow's name, as the server has it")
        last = settings.last_workflow() if settings is not None else ""
        if last and self.workflow.findText(last) >= 0:
            self.workflow.setCurrentText(last)  # what the user started last time
        self.input = PayloadEditor("startInput")
        self.workflow_id = QLineEdit()
        self.workflow_id.setObjectName("workflowIdEdit")
        self.workflow_id.setAccessibleName("Workflow id")
        self.workflow_id.setPlaceholderText("blank: the run's own id")
        self.reuse = QComboBox()
        self.reuse.setObjectName("reusePolicyCombo")
        self.reuse.setAccessibleName("Reuse policy")
        for policy in WorkflowIdReusePolicy:
            self.reuse.addItem(policy.value, policy)
            self.reuse.setItemData(
                self.reuse.count() - 1, REUSE_HELP[policy], Qt.ItemDataRole.ToolTipRole
            )
        self.memo = PayloadEditor("startMemo")
        self.attributes = PayloadEditor("startAttributes", object_json=True)
        self.form.addRow("&Workflow", self.workflow)
        self.form.addRow("&Input", self.input)
        self.form.addRow("Workflow &id", self.workflow_id)
        self.form.addRow("&Reuse policy", self.reuse)
        self.form.addRow("&Memo", self.memo)
        self.form.addRow("Search &attributes", self.attributes)
        self.workflow.currentTextChanged.connect(self.on_workflow_changed)
        for editor in (self.input, self.memo, self.attributes):
            editor.validity_changed.connect(lambda _ok: self.refresh_submit())
        self.on_workflow_changed(self.workflow.currentText())
        if self.check_writable() and self.by_name:
            self.notice.setText(BY_NAME_NOTE)
            self.notice.show()
        elif self.disabled_reason is None and self.workflow.count() == 0:
            self.disable_with_reason(NO_CODE_REASON)
        self.refresh_submit()

    def names_in_file(self) -> list[str]:
        """Workflow names the file's newest runs carry: suggestions to start by name."""
        try:
            page = self.session.list_executions(ExecutionFilter().limit(500))
        except (HarvestError, OSError):  # no suggestions: a name can still be typed
            return []
        return sorted({str(run.workflow_name) for run in page.executions})

    def on_workflow_changed(self, name: str) -> None:
        """Type the input after the workflow's annotation."""
        info = workflow_info(self.session, name)
        self.input.set_type(None if info is None else info.input_type)
        template = self.last_input(name) if name else None
        if template is None:
            self.input.set_template("", "")
        else:
            self.input.set_template(
                json_text(template[1]), f"the input of the last run ({template[0]})"
            )
        self.refresh_submit()

    def last_input(self, name: str) -> tuple[str, Any] | None:
        """(workflow id, input) of the newest run of `name` in the file, or None."""
        try:
            page = self.session.list_executions(
                ExecutionFilter().workflow_name(name).limit(1)
            )
            if not page.executions:
                return None
            detail = self.session.describe(page.executions[0].exec_id)
        except (HarvestError, OSError):  # no template: the form works without one
            return None
        if detail.input.is_null or detail.input.is_unreadable:
            return None
        return detail.workflow_id, detail.input.value

    def can_submit(self) -> bool:
        """A workflow is chosen and every JSON box is valid."""
        return bool(self.workflow.currentText().strip()) and all(
            e.valid for e in (self.input, self.memo, self.attributes)
        )

    def request(self) -> StartRequest:
        """The start the fields describe.

        Raises:
            ValueError: a JSON box does not hold a valid value.
        """
        values = {}
        for label, editor in (
            ("input", self.input),
            ("memo", self.memo),
            ("search attributes", self.attributes),
        ):
            parsed = editor.value()
            if not parsed.ok:
                raise ValueError(f"{label}: {parsed.error}")
            values[label] = parsed.value
        return StartRequest(
            workflow_name=self.workflow.currentText().strip(),
            input=values["input"],
            workflow_id=self.workflow_id.text().strip() or None,
            reuse_policy=self.reuse.currentData(),
            memo=values["memo"],
            search_attributes=values["search attributes"] or {},
        )

    def submit(self) -> Any:
        """Start the run and say what happened."""
        request = self.request()

        def report(outcome: StartOutcome) -> StartOutcome:
            how = (
                "Started a new run"
                if outcome.started_fresh
                else "Attached to the running run"
            )
            run = read_target(self.session, str(outcome.exec_id))
            named = run.text if run.found else str(outcome.exec_id)
            self.show_result(f"{how}: {named}")
            if self.settings is not None:
                self.settings.set_last_workflow(request.workflow_name)
            return outcome

        return self.then(start_workflow(self.session, request), report)
