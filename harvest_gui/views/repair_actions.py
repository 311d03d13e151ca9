"""Opening the repair forms of the Run menu: reset, fork and the actions on every filtered run.

Each form opens on what the window shows: reset at the event selected in
the History tab or on the time-travel slider, fork with the run's activity steps, a bulk action with the
run list's filter. A form opened for other inputs is closed first, so its
text never names a point, a step or a filter the user has left.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from harvest_gui.forms.bulk import BulkRunsDialog
from harvest_gui.forms.bulk_signal import BulkSignalDialog
from harvest_gui.forms.fork import ForkDialog, activity_steps
from harvest_gui.forms.reset import ResetDialog

if TYPE_CHECKING:
    from harvest_gui.views.form_windows import FormWindows
    from harvest_gui.views.window_host import WindowHost


class Operations(Protocol):
    """What these need of the window's Operations (views/operations.py)."""

    host: WindowHost
    opened: FormWindows

    @property
    def session(self) -> Any:
        """The open session, or None."""

    def say(self, text: str, ms: int = 6000) -> None:
        """Show a status-bar message."""


def _fresh(ops: Operations, key: str) -> None:
    """Close the open form `key`: it was opened on other inputs."""
    stale = ops.opened.forms.get(key)
    if stale is not None:
        stale.close()


def open_reset(ops: Operations, exec_id: str) -> None:
    """Reset at the event selected in the History tab (none: the engine's default point)."""
    detail = ops.host.detail
    event = detail.history.current_event() if detail is not None else None
    open_reset_at(ops, exec_id, event.seq if event is not None else None)


def open_reset_at(ops: Operations, exec_id: str, seq: int | None) -> None:
    """Reset `exec_id` at event `seq` (the time-travel slider's; None: the default point)."""
    if ops.session is None:
        ops.say("Open a file first (Ctrl+O).")
        return
    _fresh(ops, "reset")
    ops.opened.open_form(
        "reset", lambda: ResetDialog(ops.session, exec_id, seq), exec_id
    )


def open_fork(ops: Operations, exec_id: str) -> None:
    """Fork from one of the run's activity steps (the last one preselected)."""
    steps = activity_steps(ops.session.load_history(exec_id))
    _fresh(ops, "fork")
    ops.opened.open_form(
        "fork", lambda: ForkDialog(ops.session, exec_id, steps), exec_id
    )


def open_bulk(ops: Operations, action: str) -> None:
    """Act on every run the list's filter matches (counted and named by the form)."""
    run_list = ops.host.run_list
    if ops.session is None or run_list is None:
        ops.say("Open a file first (Ctrl+O).")
        return
    flt = run_list.model.filter
    _fresh(ops, f"{action}_many")
    ops.opened.open_form(
        f"{action}_many",
        lambda: (
            BulkSignalDialog(ops.session, flt)
            if action == "signal"
            else BulkRunsDialog(ops.session, flt, action)
        ),
        None,
    )
