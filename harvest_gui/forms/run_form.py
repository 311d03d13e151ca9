"""RunActionDialog: a form that acts on one run, names it by workflow id and follows the selection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QLineEdit

from harvest_gui.forms.base import ActionDialog
from harvest_gui.forms.note_label import NoteLabel

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

FOLLOWS_NOTE = (
    "Follows the run selected in the main window: selecting another run there "
    "points this form at it"
)
"""The note under the "Run" line, ended by each form's `follows_tail` and a full stop."""


@dataclass(frozen=True)
class RunTarget:
    """The run a form acts on, as a user knows it."""

    exec_id: str
    workflow_id: str = ""
    workflow_name: str = ""
    state: str = ""
    closed: bool = False
    found: bool = True

    @property
    def text(self) -> str:
        """``order-1 · typed_order (RUNNING; exec 0192…)``: the ids a user chose come first."""
        if not self.found:
            return f"{self.exec_id} (no longer in the file)"
        if self.workflow_id == self.exec_id:  # started without an id of its own
            return f"{self.workflow_id} · {self.workflow_name} ({self.state})"
        return (
            f"{self.workflow_id} · {self.workflow_name} "
            f"({self.state}; exec {self.exec_id})"
        )

    @property
    def name(self) -> str:
        """``order-1 · typed_order``: how a window names the run (its exec id once it is gone)."""
        return (
            f"{self.workflow_id} · {self.workflow_name}" if self.found else self.exec_id
        )

    @property
    def short(self) -> str:
        """The workflow id (the exec id when the run is gone): for a window title."""
        return self.workflow_id if self.found else self.exec_id


def read_target(session: Any, exec_id: str) -> RunTarget:
    """What the file says of `exec_id` (a purged or damaged run: its exec id only)."""
    try:
        detail = session.describe(exec_id)
    except Exception:  # purged or damaged: the form still opens; its action reports it
        return RunTarget(exec_id, found=False)
    return RunTarget(
        exec_id=exec_id,
        workflow_id=str(detail.workflow_id),
        workflow_name=str(detail.workflow_name),
        state=str(detail.state),
        closed=detail.closed_at is not None,
    )


class RunActionDialog(ActionDialog):
    """An `ActionDialog` about one run: a "Run" line naming it, retargeted with the selection.

    Subclasses place `run_line` in their form, redo what depends on the
    run in `on_run_changed` and say what that redoes in `follows_tail`.
    """

    follows_tail = ""
    """What the note adds about a change of run (" and clears its confirmation")."""

    def __init__(
        self,
        session: Any,
        exec_id: str,
        title: str,
        submit_text: str,
        name: str,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(session, title, submit_text, name, parent)
        self.base_title = title
        self.exec_id = exec_id
        self.target = read_target(session, exec_id)
        self.run_line = QLineEdit(self.target.text)
        self.run_line.setObjectName("runLine")
        self.run_line.setAccessibleName("Run")
        self.run_line.setReadOnly(True)
        self.run_line.setCursorPosition(0)
        self.follows = NoteLabel(FOLLOWS_NOTE + self.follows_tail + ".")
        self.follows.setObjectName("followsNote")
        self.follows.setStyleSheet("color: palette(mid);")
        self._show_target()
        changed = getattr(session, "changed", None)
        if changed is not None:  # a Session: follow the run's state as it commits
            changed.connect(self.on_file_changed)

    def on_file_changed(self) -> None:
        """Re-read the run's state; one that closed meanwhile is said at once."""
        if not self.isVisible():
            return
        fresh = read_target(self.session, self.exec_id)
        if fresh == self.target:
            return
        closed_now = fresh.closed != self.target.closed
        self.target = fresh
        self._show_target()
        if closed_now:
            self.on_run_changed()

    def add_run_rows(self) -> None:
        """The "Run" line and the note saying the form follows the selection."""
        self.form.addRow("Run", self.run_line)
        self.form.addRow("", self.follows)

    def _show_target(self) -> None:
        self.run_line.setText(self.target.text)
        self.run_line.setCursorPosition(0)
        self.run_line.setToolTip(self.target.text)
        self.setWindowTitle(f"{self.base_title}: {self.target.short}")

    def retarget(self, exec_id: str) -> None:
        """Act on `exec_id` from now on (the main window's selection moved)."""
        if exec_id == self.exec_id:
            return
        self.exec_id = exec_id
        self.target = read_target(self.session, exec_id)
        self._show_target()
        self.clear_messages()
        self.on_run_changed()
        self.refresh_submit()

    def on_run_changed(self) -> None:
        """Redo what depends on the run (names suggested, confirmations)."""
