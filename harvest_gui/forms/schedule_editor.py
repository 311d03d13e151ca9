"""ScheduleEditorDialog: cron or interval checked as you type, next fires, input, overlap, pause."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from harvest_engine import Overlap, WorkflowSchedule
from harvest_gui.forms.base import ActionDialog
from harvest_gui.forms.commands import (
    NO_CODE_REASON,
    delete_schedule,
    save_schedule,
    set_schedule_paused,
    workflow_info,
)
from harvest_gui.forms.schedule_fields import OVERLAP_HELP, ScheduleEditorFields
from harvest_gui.forms.schedule_spec import (
    CRON,
    INTERVAL,
    SpecCheck,
    fields_of,
    read_spec,
)
from harvest_gui.inspect.formatting import json_text, when
from harvest_gui.theme import error_style

if TYPE_CHECKING:
    from collections.abc import Callable

    from PySide6.QtWidgets import QWidget

    from harvest_engine import ScheduleRow


class ScheduleEditorDialog(ScheduleEditorFields, ActionDialog):
    """Create or edit the schedule of one workflow (a workflow has at most one).

    Signals:
        succeeded(object): the stored `ScheduleRow`, or the workflow name after a delete.
    """

    def __init__(
        self,
        session: Any,
        row: ScheduleRow | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(
            session,
            "New schedule" if row is None else f"Edit schedule: {row.workflow_name}",
            "&Save",
            "scheduleEditorDialog",
            parent,
        )
        self.row = row
        # The workflows that have a schedule already: saving a "new" one replaces it.
        self.existing: dict[str, ScheduleRow] = {}
        if row is None:
            try:
                self.existing = {r.workflow_name: r for r in session.list_schedules()}
            except Exception:  # a read error leaves the warning out, not the form
                self.existing = {}
        self.now: Callable[[], datetime] = lambda: datetime.now(UTC)
        self._build_fields(session, row)
        for w in (self.cron, self.timezone, self.interval):
            w.textChanged.connect(self.on_spec_changed)
        self.cron_radio.toggled.connect(self.on_spec_changed)
        self.input.validity_changed.connect(lambda _ok: self.refresh_submit())
        self.workflow.currentTextChanged.connect(self.on_workflow_changed)
        self.pause_button.clicked.connect(lambda: self.on_pause(True))
        self.resume_button.clicked.connect(lambda: self.on_pause(False))
        self.delete_button.clicked.connect(self.on_delete_clicked)
        self.confirm_delete.clicked.connect(self.on_delete_confirmed)
        self.check = SpecCheck(None, "")
        self.on_overlap_changed()
        self.load(row)
        if self.check_writable() and self.workflow.count() == 0:
            self.disable_with_reason(NO_CODE_REASON)
        if self.disabled_reason is not None:
            for b in (self.pause_button, self.resume_button, self.delete_button):
                b.setEnabled(False)

    # -- loading ----------------------------------------------------------------------

    def load(self, row: ScheduleRow | None) -> None:
        """Fill the fields from a stored schedule (None: a new interval schedule)."""
        self.row = row
        if row is None:
            self.interval_radio.setChecked(True)
            self.interval.setText("1h")
            self.on_workflow_changed(self.workflow.currentText())
        else:
            self.workflow.setCurrentText(row.workflow_name)
            fields = fields_of(row)
            (
                self.cron_radio if fields["kind"] == CRON else self.interval_radio
            ).setChecked(True)
            self.cron.setText(fields["cron"])
            self.timezone.setText(fields["timezone"])
            self.interval.setText(fields["interval"])
            self.input.set_type(self._input_type(row.workflow_name))
            self.input.set_text("" if row.input.is_null else json_text(row.input.value))
            index = self.overlap.findData(Overlap(str(row.overlap)))
            self.overlap.setCurrentIndex(max(0, index))
            self.max_active.setValue(row.max_active_runs)
        self.workflow.setEnabled(row is None)
        if row is not None:
            self.existing = {}
            self.setWindowTitle(f"Edit schedule: {row.workflow_name}")
            self.replace_note.hide()
            self.submit_button.setText("&Save")
        self.on_spec_changed()
        self.show_state()

    def _input_type(self, name: str) -> Any:
        info = workflow_info(self.session, name)
        return None if info is None else info.input_type

    def on_workflow_changed(self, name: str) -> None:
        """Type the input after the chosen workflow; warn when saving would replace one."""
        if self.row is None:
            self.input.set_type(self._input_type(name))
        existing = self.existing.get(name) if self.row is None else None
        if existing is None:
            self.replace_note.hide()
            self.submit_button.setText("&Save")
        else:
            spec = existing.schedule.describe() if existing.schedule else "a schedule"
            self.replace_note.setText(
                f"{name} already has a schedule ({spec}); a workflow has one "
                "schedule, so saving replaces it."
            )
            self.replace_note.show()
            self.submit_button.setText("&Replace")
        self.refresh_submit()

    def on_overlap_changed(self) -> None:
        """Say what the chosen overlap policy does."""
        policy = self.overlap.currentData()
        self.overlap_help.setText(OVERLAP_HELP.get(policy, ""))

    def show_state(self) -> None:
        """Paused or active, and the next fire, for a stored schedule."""
        row = self.row
        stored = row is not None
        if row is None:
            self.state_label.setText("new: not stored yet")
        elif row.problem:
            self.state_label.setText(f"cannot fire: {row.problem}")
        else:
            state = (
                "paused"
                if row.paused
                else f"active, next fire {when(row.next_fire_at)}"
            )
            self.state_label.setText(state)
        writable = self.disabled_reason is None
        self.pause_button.setEnabled(writable and stored and not (row and row.paused))
        self.resume_button.setEnabled(writable and stored and bool(row and row.paused))
        self.delete_button.setEnabled(writable and stored)
        self.confirm_delete.hide()

    # -- the spec ---------------------------------------------------------------------

    @property
    def kind(self) -> str:
        """``cron`` or ``interval``."""
        return CRON if self.cron_radio.isChecked() else INTERVAL

    def on_spec_changed(self) -> None:
        """Validate as the user types; list the next five fires."""
        cron = self.kind == CRON
        self.cron.setEnabled(cron and self.disabled_reason is None)
        self.timezone.setEnabled(cron and self.disabled_reason is None)
        self.interval.setEnabled(not cron and self.disabled_reason is None)
        self.check = read_spec(
            self.kind,
            self.cron.text(),
            self.timezone.text(),
            self.interval.text(),
            self.now(),
        )
        self.preview.clear()
        if self.check.schedule is None:
            self.spec_status.setText(self.check.error or "")
            self.spec_status.setStyleSheet(error_style())
        else:
            self.spec_status.setText(f"valid: {self.check.schedule.describe()}")
            self.spec_status.setStyleSheet("color: palette(mid);")
            for at in self.check.next_fires:
                self.preview.addItem(fire_text(at, self.check.schedule))
        self.refresh_submit()

    def can_submit(self) -> bool:
        """A valid spec, a workflow and a valid input."""
        return (
            self.check.schedule is not None
            and bool(self.workflow.currentText())
            and self.input.valid
        )

    def schedule(self) -> WorkflowSchedule:
        """The schedule the fields describe.

        Raises:
            ValueError: a field is invalid.
        """
        if self.check.schedule is None:
            raise ValueError(self.check.error or "the schedule is not valid")
        parsed = self.input.value()
        if not parsed.ok:
            raise ValueError(f"input: {parsed.error}")
        return WorkflowSchedule(
            self.workflow.currentText(),
            self.check.schedule,
            input=parsed.value,
            max_active_runs=self.max_active.value(),
            overlap=self.overlap.currentData(),
        )

    # -- actions ----------------------------------------------------------------------

    def submit(self) -> Any:
        """Store the schedule."""
        row = save_schedule(self.session, self.schedule())
        self.show_result(
            f"Saved: {row.workflow_name}, next fire {when(row.next_fire_at)}"
        )
        self.load(row)
        return row

    def _reload(self, name: str) -> None:
        rows = {r.workflow_name: r for r in self.session.runtime.list_schedules()}
        self.load(rows.get(name))

    def on_pause(self, paused: bool) -> None:
        """Pause or resume the stored schedule."""
        if self.row is None:
            return
        self.clear_messages()
        name = self.row.workflow_name
        try:
            found = set_schedule_paused(self.session, name, paused)
        except Exception as exc:  # shown in words
            self.show_error(exc)
            return
        if not found:
            self.show_error(f"There is no schedule for {name} any more.")
        self._reload(name)
        # The pressed button is now disabled: keep the focus on its counterpart, not
        # on whatever follows it in the tab order (Delete…).
        counterpart = self.resume_button if paused else self.pause_button
        (counterpart if counterpart.isEnabled() else self.close_button).setFocus()
        self.show_result(f"{name}: {'paused' if paused else 'resumed'}")
        if self.row is not None:
            self.succeeded.emit(self.row)

    def on_delete_clicked(self) -> None:
        """Ask for a second, deliberate click naming the schedule (the focus stays put)."""
        if self.row is None:
            return
        self.confirm_delete.setText(
            f"Yes, delete the schedule of {self.row.workflow_name}"
        )
        self.confirm_delete.show()

    def on_delete_confirmed(self) -> None:
        """Delete the stored schedule (its runs keep running)."""
        if self.row is None:
            return
        self.clear_messages()
        name = self.row.workflow_name
        try:
            delete_schedule(self.session, name)
        except Exception as exc:  # shown in words
            self.show_error(exc)
            return
        self.load(None)
        self.show_result(
            f"Deleted the schedule of {name}; runs it started keep running."
        )
        self.succeeded.emit(name)


def fire_text(at: datetime, schedule: Any) -> str:
    """A fire time in the schedule's own zone (a cron reads its fields there), then UTC.

    Short enough for the editor's width: a zoned cron fire reads
    ``2026-12-05 03:00 Europe/Paris (02:00 UTC)``. An interval has no zone of
    its own: its fires show in local time and UTC.
    """
    utc = at.astimezone(UTC)
    if schedule.interval is not None:
        return f"{when(at)} local ({utc:%H:%M:%S} UTC)"
    if schedule.timezone == "UTC":
        return f"{utc:%Y-%m-%d %H:%M:%S} UTC"
    local = at.astimezone(ZoneInfo(schedule.timezone))
    same_day = local.date() == utc.date()
    other = f"{utc:%H:%M}" if same_day else f"{utc:%m-%d %H:%M}"
    return f"{local:%Y-%m-%d %H:%M} {schedule.timezone} ({other} UTC)"
