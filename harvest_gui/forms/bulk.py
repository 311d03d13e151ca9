"""BulkRunsDialog: cancel, terminate, pause, unpause or reset every run the list's filter matches, named first."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import (
    QCheckBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QWidget,
)

from harvest_gui.forms.base import ActionDialog
from harvest_gui.forms.commands import act_on_many
from harvest_gui.forms.note_label import NoteLabel
from harvest_gui.inspect import formatting

if TYPE_CHECKING:
    from harvest_engine import ExecutionFilter, ExecutionSummary

NAMED = 12
"""Runs named one per line before the action; the rest are counted."""
COUNT_CAP = 10_000
"""Matching runs counted at most before the form says "at least"."""
RESET_CAP = 1_000
"""The same for a reset, which reads each run's row (and an open run's history) to count it."""

BULK_TEXTS = {
    # action: (verb, what happens to each run, takes a reason)
    "cancel": (
        "Cancel",
        "each is asked to stop and ends CANCELLED after its clean-up",
        True,
    ),
    "terminate": ("Terminate", "each ends TERMINATED at once, without clean-up", True),
    "pause": (
        "Pause",
        "each stops deciding and starting attempts until unpaused",
        True,
    ),
    "unpause": ("Unpause", "each goes on from where it was paused", False),
    "reset": (
        "Reset",
        "each starts again from its default point (just before its last failed "
        "activity, else its last decision) with today's code; a running one ends "
        "TERMINATED (a run that a reset with this same reason made is passed over)",
        True,
    ),
    "signal": (
        "Signal",
        "each takes the signal once (sending the same signal again stages nothing "
        "twice)",
        False,
    ),
}
NONE_MATCH = {
    "unpause": "No paused run matches this filter.",
    "reset": "No run matching this filter can be reset (a run reset before, or "
    "one that never took a decision, is passed over).",
    "signal": "No open run matches this filter: none can take a signal.",
}
"""What the form says when no run would change (the rest: "No running run ... can be …d")."""


def filter_words(flt: ExecutionFilter) -> str:
    """The run list's filter in words ("" for none)."""
    parts = []
    if flt.workflow_names:
        parts.append("workflow " + " or ".join(flt.workflow_names))
    if flt.workflow_id_prefixes:
        parts.append("workflow id starting " + " or ".join(flt.workflow_id_prefixes))
    if flt.states:
        parts.append("state " + " or ".join(flt.states))
    if flt.started_from is not None:
        parts.append(f"started from {formatting.when(flt.started_from)}")
    if flt.started_until is not None:
        parts.append(f"started until {formatting.when(flt.started_until)}")
    for key, value in flt.search_attributes:
        parts.append(f"{key} = {value!r}")
    return "; ".join(parts)


ACTED_STATES = {
    "signal": ("RUNNING", "ENQUEUED"),  # a queued run takes signals: they wait for it
    "terminate": ("RUNNING", "ENQUEUED"),  # a queued run ends without ever starting
    "reset": None,  # any run that took a decision, open or closed
}
"""The states each action changes (None: any), as the engine's bulk calls do; cancel,
pause and unpause act on RUNNING runs only."""


def matching(
    session: Any, flt: ExecutionFilter, action: str
) -> tuple[list[ExecutionSummary], bool]:
    """The runs `flt` matches that `action` would change, newest first; whether all were read.

    Pause skips runs already paused and unpause takes only paused ones, as
    the engine's bulk calls do; a reset passes over runs reset before and
    runs never decided (still waiting in a queue, or with nothing but their
    start in the history), as the engine does. The count is what the form
    promises.
    """
    if action == "unpause":
        flt = flt.paused(True)
    elif action == "pause":
        flt = flt.paused(False)
    acted = ACTED_STATES.get(action, ("RUNNING",))
    if acted is not None:
        states = [s for s in acted if not flt.states or s in flt.states]
        if not states:
            return [], True  # the filter names only states the action leaves alone
        flt = replace(flt, states=tuple(states))
    page_filter = flt.limit(500)
    cap = RESET_CAP if action == "reset" else COUNT_CAP
    runs: list[ExecutionSummary] = []
    while True:
        page = session.list_executions(page_filter)
        runs.extend(r for r in page.executions if _acted_on(session, r, action))
        if page.next is None:
            return runs, True
        if len(runs) >= cap:
            return runs, False
        page_filter = page_filter.before(page.next)


def _acted_on(session: Any, run: ExecutionSummary, action: str) -> bool:
    """Whether `action` changes `run` (a damaged one is passed over by every bulk call)."""
    if run.damaged is not None:
        return False
    if action != "reset":
        return True
    if run.state == "ENQUEUED":
        return False
    try:
        if session.describe(run.exec_id).reset_to is not None:
            return False
        # An open run may not have decided yet; a closed one has its end event too.
        return run.state != "RUNNING" or len(session.load_history(run.exec_id)) > 1
    except Exception:  # purged meanwhile: the engine passes it over too
        return False


class BulkRunsDialog(ActionDialog):
    """One action on every run the run list's filter matches.

    The count and the runs (by workflow id and workflow) are shown before
    anything happens; the submit button says the count, waits for the
    confirmation box and is never the default button (Enter does not act).

    Signals:
        succeeded(int): how many runs the engine changed.
    """

    client_ok = True

    def __init__(
        self,
        session: Any,
        flt: ExecutionFilter,
        action: str,
        parent: QWidget | None = None,
    ) -> None:
        verb, effect, takes_reason = BULK_TEXTS[action]
        super().__init__(
            session,
            f"{verb} the runs matching the filter",
            f"&{verb} runs",
            f"{action}ManyDialog",
            parent,
        )
        self.flt = flt
        self.action = action
        self.submit_not_default()
        self.runs, self.complete = matching(session, flt, action)
        self.headline = NoteLabel()
        self.headline.setObjectName("bulkHeadline")
        self.names = QPlainTextEdit()
        self.names.setObjectName("bulkRuns")
        self.names.setAccessibleName("The runs this acts on")
        self.names.setReadOnly(True)
        self.names.setMaximumHeight(self.fontMetrics().lineSpacing() * 9)
        self.reason = QLineEdit()
        self.reason.setObjectName("reasonEdit")
        self.reason.setAccessibleName("Reason")
        self.reason.setPlaceholderText("why (recorded on each run)")
        n = len(self.runs)
        count = (
            f"{'at least ' if not self.complete else ''}{formatting.count(n, 'run')}"
        )
        these = "this" if n == 1 and self.complete else "these"  # not "these 1 run"
        self.confirm = QCheckBox(f"I understand this acts on {these} {count}")
        self.confirm.setObjectName("confirmCheck")
        self.confirm.toggled.connect(lambda _c: self.refresh_submit())
        self.form.addRow(
            "Filter",
            QLabel(formatting.middle(filter_words(flt) or "(none: every run)", 200)),
        )
        self.form.addRow(self.headline)
        self.form.addRow(self.names)
        self.add_fields(takes_reason)
        self.form.addRow(self.confirm)
        self.headline.setText(
            f"{verb} the {count} matching this filter: {effect}."
            if n
            else NONE_MATCH.get(
                action, f"No running run matching this filter can be {verb.lower()}d."
            )
        )
        lines = [
            f"{r.workflow_id} · {r.workflow_name}"
            + (f" ({r.state})" if action == "reset" else "")
            for r in self.runs[:NAMED]
        ]
        if n > NAMED:
            lines.append(f"… and {n - NAMED:,} more")
        self.names.setPlainText("\n".join(lines))
        self.submit_button.setText(f"&{verb} {count}" if n else f"&{verb} runs")
        self.check_writable()
        self.confirm.setEnabled(bool(n) and self.disabled_reason is None)
        self.refresh_submit()

    def add_fields(self, takes_reason: bool) -> None:
        """The rows between the runs and the confirmation: the reason, if the action takes one."""
        if takes_reason:
            self.form.addRow("&Reason", self.reason)

    def can_submit(self) -> bool:
        """Only once confirmed, and only when a run matches."""
        return bool(self.runs) and self.confirm.isChecked()

    def submit(self) -> Any:
        """Act on every matching run; say how many the engine changed."""

        def report(changed: int) -> int:
            verb = BULK_TEXTS[self.action][0]
            self.show_result(f"{verb}: {formatting.count(changed, 'run')} changed.")
            self.confirm.setChecked(False)
            self.confirm.setEnabled(False)
            return changed

        return self.then(
            act_on_many(
                self.session, self.action, self.flt, self.reason.text().strip()
            ),
            report,
        )
