"""BackfillDialog: start a schedule's runs for the slots of a past range, previewed first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QDateTime, QTimeZone
from PySide6.QtWidgets import QDateTimeEdit, QLabel, QPlainTextEdit, QWidget

from harvest_engine import next_fire_times
from harvest_gui.forms.base import ActionDialog
from harvest_gui.forms.commands import backfill_schedule, schedule_firing_reason
from harvest_gui.inspect import formatting
from harvest_gui.inspect.schedule_runs import (
    BackfillPreview,
    backfill_preview,
    skip_hold,
)

if TYPE_CHECKING:
    from harvest_engine import ScheduleRow

SHOWN_SLOTS = 12
"""Slots listed one per line in the preview; the rest are counted."""


def _edit(name: str, at: datetime) -> QDateTimeEdit:
    edit = QDateTimeEdit()
    edit.setObjectName(name)
    edit.setTimeZone(QTimeZone.utc())
    edit.setDisplayFormat("yyyy-MM-dd HH:mm:ss 'UTC'")
    edit.setCalendarPopup(True)
    edit.setDateTime(QDateTime.fromSecsSinceEpoch(int(at.timestamp()), QTimeZone.utc()))
    return edit


DEFAULT_SLOTS = 10
"""The range the form opens with covers about this many of the schedule's latest slots."""


def default_span(schedule: Any, now: datetime) -> timedelta:
    """About `DEFAULT_SLOTS` of the schedule's periods (a day when its spec is damaged).

    A fixed day held 1,440 slots of a minutely schedule, past the engine's
    1,000 per backfill, so the form opened refusing its own range.
    """
    if schedule is None:
        return timedelta(days=1)
    first, second = next_fire_times(schedule, now, 2)
    return max(second - first, timedelta(seconds=1)) * DEFAULT_SLOTS


def _aware(edit: QDateTimeEdit) -> datetime:
    return datetime.fromtimestamp(edit.dateTime().toSecsSinceEpoch(), UTC)


class BackfillDialog(ActionDialog):
    """Pick a range; the slots it would start are listed before anything starts.

    Signals:
        succeeded(list): the exec ids of the runs started.
    """

    client_ok = True

    def __init__(
        self, session: Any, row: ScheduleRow, parent: QWidget | None = None
    ) -> None:
        super().__init__(
            session,
            f"Backfill the schedule of {row.workflow_name}",
            "&Start runs",
            "backfillDialog",
            parent,
        )
        self.row = row
        # Enter in a date field must not start the runs (found under Xvfb: Start was
        # the default button); the list of slots is read first, then the button.
        self.submit_not_default()
        now = datetime.now(UTC).replace(microsecond=0)
        self.start_edit = _edit("backfillStart", now - default_span(row.schedule, now))
        self.start_edit.setAccessibleName("Backfill from")
        self.end_edit = _edit("backfillEnd", now)
        self.end_edit.setAccessibleName("Backfill to")
        self.summary = QLabel()
        self.summary.setObjectName("backfillSummary")
        self.summary.setWordWrap(True)
        self.slots_view = QPlainTextEdit()
        self.slots_view.setObjectName("backfillSlots")
        self.slots_view.setAccessibleName("Slots the backfill would start")
        self.slots_view.setReadOnly(True)
        self.slots_view.setMaximumHeight(self.fontMetrics().lineSpacing() * 9)
        self.form.addRow("Schedule", QLabel(formatting.middle(row.workflow_name, 80)))
        self.form.addRow("From (UTC)", self.start_edit)
        self.form.addRow("To (UTC)", self.end_edit)
        self.form.addRow("Would start", self.summary)
        self.form.addRow(self.slots_view)
        self.preview: BackfillPreview = BackfillPreview([], set())
        self.start_edit.dateTimeChanged.connect(lambda _t: self.on_range_changed())
        self.end_edit.dateTimeChanged.connect(lambda _t: self.on_range_changed())
        self.on_range_changed()
        reason = schedule_firing_reason(session)
        if reason is not None:
            self.disable_with_reason(reason)
        self.refresh_submit()

    @property
    def start(self) -> datetime:
        """The range's first instant (UTC)."""
        return _aware(self.start_edit)

    @property
    def end(self) -> datetime:
        """The range's last instant (UTC, included)."""
        return _aware(self.end_edit)

    def on_range_changed(self) -> None:
        """List the slots the range holds, and which already have a run."""
        p = backfill_preview(
            self.session.reader,
            self.row.workflow_name,
            self.row.schedule,
            self.start,
            self.end,
        )
        self.preview = p
        held = skip_hold(self.session.reader, self.row)
        if p.error is not None:
            self.summary.setText(f"Nothing: {p.error}.")
            self.slots_view.clear()
        else:
            n = len(p.to_start)
            skipped = len(p.taken)
            self.summary.setText(
                f"{formatting.count(n, 'run')} (one per slot)"
                + (
                    f"; skipped, as they have a run: {formatting.count(skipped, 'slot')}"
                    if skipped
                    else ""
                )
                + (f". None now: {held}" if held and n else "")
            )
            lines = [
                f"{s:%Y-%m-%d %H:%M:%S} UTC" + ("  (has a run)" if s in p.taken else "")
                for s in p.slots[:SHOWN_SLOTS]
            ]
            if len(p.slots) > SHOWN_SLOTS:
                lines.append(f"… and {len(p.slots) - SHOWN_SLOTS:,} more")
            self.slots_view.setPlainText("\n".join(lines) or "no slot in this range")
        self.submit_button.setText(
            f"&Start {formatting.count(len(p.to_start), 'run')}"
            if p.to_start
            else "&Start runs"
        )
        self.refresh_submit()

    def can_submit(self) -> bool:
        """Only a range with slots to start."""
        return bool(self.preview.to_start)

    def submit(self) -> Any:
        """Backfill the range; say how many runs started."""
        result = backfill_schedule(
            self.session, self.row.workflow_name, self.start, self.end
        )
        return self.then(result, self._started)

    def _started(self, started: list[Any]) -> list[Any]:
        self.show_result(
            f"Started {formatting.count(len(started), 'run')} of {self.row.workflow_name}"
            + (
                ":\n" + "\n".join(str(e) for e in started[:SHOWN_SLOTS])
                if started
                else "."
            )
        )
        self.on_range_changed()
        return started
