"""PayloadEditor: JSON input checked as you type, with one field per dataclass attribute."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from harvest_gui.forms.note_label import NoteLabel
from harvest_gui.forms.payload_input import (
    KIND_BOOL,
    FieldSpec,
    Parsed,
    fields_to_json,
    form_fields,
    friendly_label,
    is_form_dataclass,
    json_to_fields,
    parse_json,
    parse_typed,
    skeleton,
)
from harvest_gui.theme import error_style

RAW_MIN_HEIGHT = 56
"""The raw JSON box's least height: three lines."""
RAW_MAX_HEIGHT = 150
"""The raw JSON box's greatest height."""
QWIDGETSIZE_MAX = 16_777_215
"""Qt's "no maximum" for a widget's size."""


class PayloadEditor(QWidget):
    """A JSON value to send: raw JSON, or a field per attribute when the type is a dataclass.

    Signals:
        validity_changed(bool): the text became valid or invalid.
    """

    validity_changed = Signal(bool)

    def __init__(
        self, name: str, *, object_json: bool = False, blank_is_null: bool = True
    ) -> None:
        super().__init__()
        self.setObjectName(name)
        self.object_json = object_json
        # False where an empty box sending null surprised users (a signal's payload):
        # there null must be typed.
        self.blank_is_null = blank_is_null
        self.template = ""
        self.hint: Any = None
        self.specs: list[FieldSpec] = []
        self.field_widgets: dict[str, QLineEdit | QCheckBox] = {}
        self.raw = QPlainTextEdit()
        self.raw.setObjectName(f"{name}Raw")
        self.raw.setAccessibleName(f"{name} JSON")
        self.raw.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.raw.setTabChangesFocus(True)
        self.raw.setMinimumHeight(RAW_MIN_HEIGHT)
        self.raw.setMaximumHeight(RAW_MAX_HEIGHT)
        self.raw.textChanged.connect(self.on_changed)
        self.fields_page = QWidget()
        self.fields_layout = QFormLayout(self.fields_page)
        self.fields_layout.setContentsMargins(0, 0, 0, 0)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.raw)
        self.stack.addWidget(self.fields_page)
        self._show_page(self.raw)
        self.raw_toggle = QCheckBox("Raw JSON")
        self.raw_toggle.setObjectName(f"{name}RawToggle")
        self.raw_toggle.setToolTip(
            "Edit the whole value as JSON instead of field by field"
        )
        self.raw_toggle.toggled.connect(self.on_raw_toggled)
        self.raw_toggle.hide()
        self.template_button = QPushButton()
        self.template_button.setObjectName(f"{name}TemplateButton")
        self.template_button.setFlat(True)
        self.template_button.setStyleSheet("text-align: left; color: palette(link);")
        self.template_button.clicked.connect(self.use_template)
        self.template_button.hide()
        self.status = NoteLabel()
        self.status.setObjectName(f"{name}Status")
        # No taller than it needs (the raw box stops at its maximum): room a
        # form has to spare never opens a gap under the fields or the box.
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.raw_toggle)
        layout.addWidget(self.template_button)
        layout.addWidget(self.stack)
        layout.addWidget(self.status)
        # Tab reaches the box before the offer above it: Tab then typing must type,
        # not land on "Fill in …" whose Space would replace what was typed (found
        # under Xvfb: the start form sent the last run's input instead).
        QWidget.setTabOrder(self.raw, self.template_button)
        self.template_button.setAutoDefault(False)
        self._valid = True
        self.on_changed()

    # -- type ---------------------------------------------------------------------------

    def set_type(self, hint: Any) -> None:
        """Check against `hint`; a dataclass gets one field per attribute (raw JSON stays a click away)."""
        self.hint = hint
        while self.fields_layout.rowCount():
            self.fields_layout.removeRow(0)
        self.field_widgets = {}
        self.specs = form_fields(hint) if is_form_dataclass(hint) else []
        for spec in self.specs:
            if spec.kind == KIND_BOOL:
                box = QCheckBox()
                box.toggled.connect(self.on_changed)
                widget: QLineEdit | QCheckBox = box
            else:
                widget = QLineEdit()
                widget.setPlaceholderText("required" if spec.required else "default")
                widget.textChanged.connect(self.on_changed)
            widget.setObjectName(f"{self.objectName()}Field_{spec.name}")
            widget.setAccessibleName(spec.name)
            self.field_widgets[spec.name] = widget
            self.fields_layout.addRow(spec.label, widget)
        # Made after the form, the fields went to the end of its Tab chain: Tab from
        # "Raw JSON" skipped them to the next row (found under Xvfb). In order here.
        previous: QWidget = self.raw_toggle
        for widget in self.field_widgets.values():
            QWidget.setTabOrder(previous, widget)
            previous = widget
        has_fields = bool(self.specs)
        self.raw_toggle.setVisible(has_fields)
        self.raw_toggle.blockSignals(True)
        self.raw_toggle.setChecked(not has_fields)
        self.raw_toggle.blockSignals(False)
        if has_fields:
            self._fill_fields(parse_json(skeleton(hint)).value)
        self.raw.setPlainText(skeleton(hint) if has_fields else "")
        self._show_page(self.fields_page if has_fields else self.raw)
        self.on_changed()

    def set_template(self, text: str, what: str) -> None:
        """Offer `text` (JSON) as a starting point, e.g. the last run's input; "" offers none."""
        self.template = text
        self.template_button.setText(f"Fill in {what}")
        self.template_button.setToolTip(text[:2000])
        self.template_button.setVisible(bool(text) and not self.field_mode)

    def use_template(self) -> None:
        """Put the offered template in the box."""
        if self.template:
            self.set_text(self.template)

    @property
    def field_mode(self) -> bool:
        """Whether the fields (not the raw text) are being edited."""
        return bool(self.specs) and not self.raw_toggle.isChecked()

    def _fill_fields(self, value: Any) -> None:
        for name, text in json_to_fields(self.specs, value).items():
            widget = self.field_widgets[name]
            widget.blockSignals(True)
            if isinstance(widget, QCheckBox):
                widget.setChecked(text == "true")
            else:
                widget.setText(text)
            widget.blockSignals(False)

    def _field_texts(self) -> dict[str, str]:
        out = {}
        for name, widget in self.field_widgets.items():
            if isinstance(widget, QCheckBox):
                out[name] = "true" if widget.isChecked() else "false"
            else:
                out[name] = widget.text()
        return out

    def on_raw_toggled(self, raw: bool) -> None:
        """Carry the value across when switching between fields and raw JSON."""
        if raw:
            parsed = fields_to_json(self.specs, self._field_texts())
            if parsed.ok:
                self.raw.setPlainText(
                    json.dumps(parsed.value, indent=2, ensure_ascii=False)
                )
        else:
            parsed = parse_json(self.raw.toPlainText())
            if parsed.ok:
                self._fill_fields(parsed.value)
        self._show_page(self.raw if raw else self.fields_page)
        self.on_changed()

    def _show_page(self, page: QWidget) -> None:
        """Show `page` at its own height.

        A stack is as tall as its tallest page: the fields sat over the raw
        box's empty height, a gap before the status line (found under Xvfb).
        The page not shown is ignored by the layout; the one shown keeps its
        own policy (the raw box grows, the fields do not).
        """
        for other, policy in (
            (self.raw, QSizePolicy.Policy.Expanding),
            (self.fields_page, QSizePolicy.Policy.Preferred),
        ):
            shown = policy if other is page else QSizePolicy.Policy.Ignored
            other.setSizePolicy(shown, shown)
        # A minimum holds even when ignored: the raw box's only while it shows.
        self.raw.setMinimumHeight(RAW_MIN_HEIGHT if page is self.raw else 0)
        # The stack sizes to the raw box's hint (192 px), past the box's maximum.
        self.stack.setMaximumHeight(
            RAW_MAX_HEIGHT if page is self.raw else QWIDGETSIZE_MAX
        )

        self.stack.setCurrentWidget(page)
        self.stack.updateGeometry()

    # -- value --------------------------------------------------------------------------

    def set_text(self, text: str) -> None:
        """Put raw JSON text in (fields follow when they are shown)."""
        self.raw.setPlainText(text)
        if self.field_mode:
            parsed = parse_json(text)
            if parsed.ok:
                self._fill_fields(parsed.value)
                self.on_changed()

    def value(self) -> Parsed:
        """The value, or why it cannot be sent."""
        if self.field_mode:
            parsed = fields_to_json(self.specs, self._field_texts())
            if not parsed.ok:
                return parsed
            return parse_typed(json.dumps(parsed.value), self.hint)
        if not self.blank_is_null and not self.raw.toPlainText().strip():
            return Parsed(None, "empty: type the JSON to send (null sends no value)")
        parsed = parse_typed(self.raw.toPlainText(), self.hint)
        wrong_shape = self.object_json and not isinstance(
            parsed.value, (dict, type(None))
        )
        if parsed.ok and wrong_shape:
            return Parsed(None, 'must be a JSON object, e.g. {"key": "value"}')
        return parsed

    def on_changed(self) -> None:
        """Validate as the user types."""
        self.template_button.setVisible(bool(self.template) and not self.field_mode)
        parsed = self.value()
        if parsed.ok:
            what = friendly_label(self.hint)
            blank = not self.field_mode and not self.raw.toPlainText().strip()
            self.status.setText("empty: sends null" if blank else f"valid: {what}")
            self.status.setStyleSheet("color: palette(mid);")
        else:
            self.status.setText(parsed.error or "")
            self.status.setStyleSheet(error_style())
        if parsed.ok != self._valid:
            self._valid = parsed.ok
            self.validity_changed.emit(parsed.ok)

    @property
    def valid(self) -> bool:
        """Whether the current text can be sent."""
        return self._valid
