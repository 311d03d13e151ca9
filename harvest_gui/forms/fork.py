"""ForkDialog: a new run that keeps a run's first steps and runs on from a later one (`rt.fork`)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QLineEdit, QSpinBox, QWidget

from harvest_gui.forms.commands import fork_run
from harvest_gui.forms.note_label import NoteLabel
from harvest_gui.forms.run_form import RunActionDialog


def activity_steps(events: list[Any]) -> list[str]:
    """The run's steps as fork counts them: its activity schedulings, in order (their names)."""
    return [
        str(e.attrs.get("name", "")) for e in events if e.type == "ActivityScheduled"
    ]


class ForkDialog(RunActionDialog):
    """Fork one run from a step; the old run is untouched, so no confirmation is asked.

    Step N runs again in the new run; steps 1..N-1 keep their recorded
    results without running. The submit button is never the default one.

    Signals:
        succeeded(str): the new run's exec id.
    """

    client_ok = True
    follows_tail = " and lists its steps"

    def __init__(
        self,
        session: Any,
        exec_id: str,
        steps: list[str],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(
            session, exec_id, "Fork run", "&Fork run", "forkRunDialog", parent
        )
        self.submit_not_default()
        self.steps = steps
        self.steps_of = exec_id
        """The run `steps` were read from (a retarget reads the new run's)."""
        self.explain = NoteLabel(
            "Start a new run that keeps the results of the steps before the chosen one "
            "without running them, and runs the chosen step and what follows with "
            "today's code. The run you fork from is left as it is."
        )
        self.explain.setObjectName("forkExplain")
        self.from_step = QSpinBox()
        self.from_step.setObjectName("forkFromStep")
        self.from_step.setAccessibleName("From step")
        self.from_step.setRange(1, max(1, len(steps) + 1))
        self.from_step.setValue(max(1, len(steps)))
        self.from_step.valueChanged.connect(lambda _v: self.show_step())
        self.step_label = QLabel()
        self.step_label.setObjectName("forkStepName")
        self.step_label.setTextFormat(Qt.TextFormat.PlainText)
        self.workflow_id = QLineEdit()
        self.workflow_id.setObjectName("forkWorkflowId")
        self.workflow_id.setAccessibleName("New workflow id")
        self.workflow_id.setPlaceholderText("blank: the new run's own id")
        self.form.addRow(self.explain)
        self.add_run_rows()
        self.form.addRow("From &step", self.from_step)
        self.form.addRow("", self.step_label)
        self.form.addRow("New &workflow id", self.workflow_id)
        self.check_writable()
        self.show_step()
        self.refresh_submit()

    def on_run_changed(self) -> None:
        """List the run's steps again; another run's last step is preselected."""
        chosen = self.from_step.value() if self.steps_of == self.exec_id else 0
        try:
            self.steps = activity_steps(self.session.load_history(self.exec_id))
        except Exception:  # a purged run: no step; the fork would report it
            self.steps = []
        self.steps_of = self.exec_id
        self.from_step.setRange(1, max(1, len(self.steps) + 1))
        self.from_step.setValue(chosen or max(1, len(self.steps)))
        self.show_step()
        self.refresh_submit()

    def show_step(self) -> None:
        """Name the step the new run starts from."""
        n = self.from_step.value()
        if n <= len(self.steps):
            kept = f"keeps {n - 1} step(s)" if n > 1 else "keeps no step"
            self.step_label.setText(
                f"step {n}: {self.steps[n - 1]} runs again; it {kept}"
            )
        else:
            self.step_label.setText(
                f"after the last step: it keeps all {len(self.steps)}"
            )

    def can_submit(self) -> bool:
        """The run has a step to fork from."""
        return bool(self.steps)

    def submit(self) -> Any:
        """Fork; name the new run."""
        step = self.from_step.value()
        wid = self.workflow_id.text().strip() or None

        def report(new_id: Any) -> str:
            self.show_result(
                f"Forked {self.target.text} from step {step}: the new run is {new_id}."
            )
            return str(new_id)

        return self.then(fork_run(self.session, self.exec_id, step, wid), report)
