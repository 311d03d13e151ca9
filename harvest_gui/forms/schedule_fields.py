"""The schedule editor's fields and buttons, laid out in its form."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QWidget,
)

from harvest_engine import Overlap
from harvest_gui.forms.commands import workflow_infos
from harvest_gui.forms.note_label import NoteLabel
from harvest_gui.forms.payload_editor import PayloadEditor

if TYPE_CHECKING:
    from PySide6.QtCore import QObject
    from PySide6.QtWidgets import QFormLayout

    from harvest_engine import ScheduleRow

OVERLAP_HELP = {
    Overlap.SKIP: "skip a slot while max active runs of the schedule still run",
    Overlap.ALLOW_ALL: "start a run for every slot",
}


class ScheduleEditorFields:
    """The widgets of `ScheduleEditorDialog` (an `ActionDialog`), mixed into it.

    The widgets are attributes of the dialog itself (``dialog.cron``,
    ``dialog.preview``, ...). Only the overlap combo is connected here, where it
    was before the move; the dialog connects the rest and gives them behaviour.
    """

    if TYPE_CHECKING:
        form: QFormLayout

        def on_overlap_changed(self) -> None:
            """Say what the chosen overlap policy does (ScheduleEditorDialog)."""

    def _build_fields(self, session: Any, row: ScheduleRow | None) -> None:
        self.workflow = QComboBox()
        self.workflow.setObjectName("scheduleWorkflowCombo")
        self.workflow.setAccessibleName("Workflow")
        names = [info.name for info in workflow_infos(session)]
        if row is not None and row.workflow_name not in names:
            names.insert(0, row.workflow_name)
        self.workflow.addItems(names)
        self.cron_radio = QRadioButton("C&ron")
        self.cron_radio.setObjectName("cronRadio")
        self.interval_radio = QRadioButton("&Every")
        self.interval_radio.setObjectName("intervalRadio")
        # The dialog (a QObject) owns the group, as when this was built in its __init__.
        group = QButtonGroup(cast("QObject", self))
        group.addButton(self.cron_radio)
        group.addButton(self.interval_radio)
        kinds = QWidget()
        kinds_layout = QHBoxLayout(kinds)
        kinds_layout.setContentsMargins(0, 0, 0, 0)
        kinds_layout.addWidget(self.cron_radio)
        kinds_layout.addWidget(self.interval_radio)
        kinds_layout.addStretch(1)
        self.cron = QLineEdit()
        self.cron.setObjectName("cronEdit")
        self.cron.setAccessibleName("Cron expression")
        self.cron.setPlaceholderText(
            "minute hour day-of-month month day-of-week, e.g. 0 3 * * *"
        )
        self.timezone = QLineEdit("UTC")
        self.timezone.setObjectName("timezoneEdit")
        self.timezone.setAccessibleName("Time zone")
        self.interval = QLineEdit()
        self.interval.setObjectName("intervalEdit")
        self.interval.setAccessibleName("Interval")
        self.interval.setPlaceholderText("15m, 1h, 90s ...")
        self.spec_status = NoteLabel()
        self.spec_status.setObjectName("specStatus")
        self.preview = QListWidget()
        self.preview.setObjectName("nextFiresList")
        self.preview.setAccessibleName("Next five fire times")
        # Five rows and the frame, measured in the font: the fifth fire is never cut off.
        rows = self.preview.fontMetrics().lineSpacing() + 4
        self.preview.setFixedHeight(rows * 5 + 2 * self.preview.frameWidth() + 6)
        # No sideways scroll bar over the fifth line: a line too long is cut with "…".
        self.preview.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.preview.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.replace_note = NoteLabel()
        self.replace_note.setObjectName("replaceNote")
        self.replace_note.setStyleSheet("color: #e65100;")
        self.replace_note.hide()
        self.input = PayloadEditor("scheduleInput")
        self.overlap = QComboBox()
        self.overlap.setObjectName("overlapCombo")
        self.overlap.setAccessibleName("Overlap policy")
        # Short items (the combo never clips them) and the help on its own line below.
        for policy in Overlap:
            self.overlap.addItem(policy.value, policy)
            index = self.overlap.count() - 1
            self.overlap.setItemData(
                index, OVERLAP_HELP[policy], Qt.ItemDataRole.ToolTipRole
            )
        self.overlap_help = NoteLabel()
        self.overlap_help.setObjectName("overlapHelp")
        self.overlap_help.setStyleSheet("color: palette(mid);")
        self.overlap.currentIndexChanged.connect(self.on_overlap_changed)
        self.max_active = QSpinBox()
        self.max_active.setObjectName("maxActiveSpin")
        self.max_active.setAccessibleName("Max active runs")
        self.max_active.setRange(1, 10_000)
        self.state_label = QLabel()
        self.state_label.setObjectName("scheduleState")
        self.state_label.setTextFormat(Qt.TextFormat.PlainText)
        self.pause_button = QPushButton("&Pause")
        self.pause_button.setObjectName("pauseButton")
        self.resume_button = QPushButton("Res&ume")
        self.resume_button.setObjectName("resumeButton")
        self.delete_button = QPushButton("&Delete…")
        self.delete_button.setObjectName("deleteButton")
        self.confirm_delete = QPushButton("Yes, delete this schedule")
        self.confirm_delete.setObjectName("confirmDeleteButton")
        self.confirm_delete.hide()
        # Enter must never delete: the destructive buttons take no Enter and no
        # default focus, even when focus lands on them (issue 31: two Enters after
        # Pause deleted the schedule).
        for destructive in (self.delete_button, self.confirm_delete):
            destructive.setAutoDefault(False)
            destructive.setDefault(False)
        actions = QWidget()
        actions_layout = QHBoxLayout(actions)
        actions_layout.setContentsMargins(0, 0, 0, 0)
        for b in (self.pause_button, self.resume_button, self.delete_button):
            actions_layout.addWidget(b)
        actions_layout.addStretch(1)
        self.form.addRow("&Workflow", self.workflow)
        self.form.addRow("", self.replace_note)
        self.form.addRow("When", kinds)
        self.form.addRow("Cron e&xpression", self.cron)
        self.form.addRow("Time &zone", self.timezone)
        self.form.addRow("&Interval", self.interval)
        self.form.addRow("", self.spec_status)
        self.form.addRow("Next five fires", self.preview)
        self.form.addRow("I&nput", self.input)
        self.form.addRow("&Overlap", self.overlap)
        self.form.addRow("", self.overlap_help)
        self.form.addRow("Max &active runs", self.max_active)
        self.form.addRow("State", self.state_label)
        self.form.addRow(actions)
        # A row of its own: the question names the schedule, however long its name.
        self.form.addRow(self.confirm_delete)
