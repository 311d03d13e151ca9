"""PurgeDialog: remove finished runs older than a chosen age, with the count before and after."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QWidget,
)

from harvest_gui.forms.base import ActionDialog
from harvest_gui.forms.commands import purge_terminal
from harvest_gui.inspect.storage_report import purge_preview

UNITS = (("minutes", 60), ("hours", 3600), ("days", 86400))


class PurgeDialog(ActionDialog):
    """Purge terminal runs closed longer ago than an age.

    Signals:
        succeeded(int): how many runs went.
    """

    def __init__(self, session: Any, parent: QWidget | None = None) -> None:
        super().__init__(
            session, "Purge finished runs", "&Purge", "purgeDialog", parent
        )
        self.amount = QSpinBox()
        self.amount.setObjectName("purgeAmount")
        self.amount.setAccessibleName("Age")
        self.amount.setRange(0, 100_000)
        self.amount.setValue(30)
        self.unit = QComboBox()
        self.unit.setObjectName("purgeUnit")
        self.unit.setAccessibleName("Age unit")
        for label, seconds in UNITS:
            self.unit.addItem(label, seconds)
        self.unit.setCurrentIndex(2)
        age = QWidget()
        row = QHBoxLayout(age)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.amount)
        row.addWidget(self.unit)
        row.addStretch(1)
        self.preview = QLabel()
        self.preview.setObjectName("purgePreview")
        self.preview.setWordWrap(True)
        self.confirm = QCheckBox(
            "I understand purged runs and their histories are gone for good"
        )
        self.confirm.setObjectName("confirmCheck")
        self.form.addRow("Closed more than", age)
        self.form.addRow("Would remove", self.preview)
        self.form.addRow(self.confirm)
        self.amount.valueChanged.connect(self.on_age_changed)
        self.unit.currentIndexChanged.connect(self.on_age_changed)
        self.confirm.toggled.connect(lambda _c: self.refresh_submit())
        self.on_age_changed()
        self.check_writable()
        self.refresh_submit()

    @property
    def age(self) -> timedelta:
        """The chosen age."""
        return timedelta(seconds=self.amount.value() * int(self.unit.currentData()))

    def on_age_changed(self) -> None:
        """Count what the purge would remove now."""
        cutoff = datetime.now(UTC) - self.age
        preview = purge_preview(self.session.reader, cutoff)
        more = "" if preview.complete else " (at least; the scan stopped early)"
        self.preview.setText(f"{preview.count} finished runs{more}")
        self.refresh_submit()

    def can_submit(self) -> bool:
        """Only once confirmed."""
        return self.confirm.isChecked()

    def submit(self) -> Any:
        """Purge and report the count."""
        removed = purge_terminal(self.session, self.age)
        self.show_result(f"Purged {removed} finished runs.")
        self.confirm.setChecked(False)
        self.on_age_changed()
        return removed
