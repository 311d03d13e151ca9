"""ActionDialog: the frame every form shares (error and result lines, read-only reason, busy)."""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from harvest_engine import NotServed
from harvest_gui.async_bridge import track
from harvest_gui.forms.commands import (
    CLIENT_REASON,
    READ_ONLY_REASON,
    client_of,
    runtime_of,
)
from harvest_gui.forms.error_text import describe_error
from harvest_gui.forms.note_label import NoteLabel
from harvest_gui.forms.pending_command import PendingCommand
from harvest_gui.theme import error_style

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from PySide6.QtGui import QShowEvent


class ActionDialog(QDialog):
    """A non-modal form: fields, a submit button, an error line and a result pane.

    Show it with ``open()`` or ``show()``, never ``exec()`` (no
    nested Qt loop while coroutines run). Typed engine errors land in
    `error_label` in words; nothing reaches the console.

    Signals:
        succeeded(object): the action went through; carries its result.
    """

    succeeded = Signal(object)

    def __init__(
        self,
        session: Any,
        title: str,
        submit_text: str,
        name: str,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.setWindowTitle(title)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
        self.session = session
        self.busy = False
        self.disabled_reason: str | None = None
        self.form = QFormLayout()
        self.notice = NoteLabel()
        self.notice.setObjectName("formNotice")
        self.notice.hide()
        self.error_label = NoteLabel()
        self.error_label.setObjectName("formError")
        self.error_label.setStyleSheet(error_style())
        self.error_label.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
        )
        self.error_label.hide()
        self.result_view = QPlainTextEdit()
        self.result_view.setObjectName("formResult")
        self.result_view.setAccessibleName("Result")
        self.result_view.setReadOnly(True)
        self.result_view.setFont(
            QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        )
        self.result_view.setMaximumHeight(120)
        self.result_view.hide()
        self.pending = PendingCommand()
        self.buttons = QDialogButtonBox()
        self.submit_button = QPushButton(submit_text)
        self.submit_button.setObjectName("submitButton")
        self.submit_button.setDefault(True)
        self.buttons.addButton(
            self.submit_button, QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.close_button = self.buttons.addButton(
            QDialogButtonBox.StandardButton.Close
        )
        self.close_button.setObjectName("closeButton")
        self.close_button.clicked.connect(self.close)
        self.submit_button.clicked.connect(self.on_submit_clicked)
        layout = QVBoxLayout(self)
        layout.addWidget(self.notice)
        layout.addLayout(self.form)
        layout.addWidget(self.error_label)
        layout.addWidget(self.result_view)
        layout.addWidget(self.pending)
        layout.addWidget(self.buttons)
        self.setMinimumWidth(480)

    def submit_not_default(self) -> None:
        """Enter in a field never submits: for an action that ends, restarts or starts runs.

        As the button box's accept button Qt would make it the default again
        when shown, so it moves to the action role (issue 31 §3).
        """
        self.buttons.removeButton(self.submit_button)
        self.buttons.addButton(
            self.submit_button, QDialogButtonBox.ButtonRole.ActionRole
        )
        self.submit_button.setDefault(False)
        self.submit_button.setAutoDefault(False)

    # -- focus ----------------------------------------------------------------------------

    _focused_once = False

    def showEvent(self, event: QShowEvent) -> None:
        """On first show, put the keyboard in the first field (not on Close)."""
        super().showEvent(event)
        if not self._focused_once:
            self._focused_once = True
            field = self.first_field()
            if field is not None:
                field.setFocus(Qt.FocusReason.OtherFocusReason)

    def first_field(self) -> QWidget | None:
        """The first field a user can type or choose in, top to bottom; None if none is.

        Read-only lines (the run a form acts on), labels and push buttons are
        passed over: typing a reason must land in the reason, and Space must not
        press Close (issue 31).
        """
        for i in range(self.form.rowCount()):
            for role in (
                QFormLayout.ItemRole.FieldRole,
                QFormLayout.ItemRole.SpanningRole,
            ):
                item = self.form.itemAt(i, role)
                widget = item.widget() if item is not None else None
                if widget is None:
                    continue
                for candidate in (widget, *widget.findChildren(QWidget)):
                    if self._takes_input(candidate):
                        return candidate
        return None

    def _takes_input(self, widget: QWidget) -> bool:
        if not (widget.isEnabled() and widget.isVisibleTo(self)):
            return False
        if not widget.focusPolicy() & Qt.FocusPolicy.TabFocus:
            return False
        if isinstance(widget, QLabel | QPushButton):
            return False
        if isinstance(widget, QRadioButton) and not widget.isChecked():
            return False  # Space there would change the choice (Tab skips it too)
        return not (
            isinstance(widget, QLineEdit | QPlainTextEdit) and widget.isReadOnly()
        )

    # -- state ----------------------------------------------------------------------------

    client_ok = False
    """Whether this form's action also goes through a serving process (client mode)."""

    def check_writable(self) -> bool:
        """Disable everything with the reason when the session cannot act."""
        if runtime_of(self.session) is not None:
            return True
        if client_of(self.session) is not None:
            if self.client_ok:
                return True
            self.disable_with_reason(CLIENT_REASON)
            return False
        self.disable_with_reason(READ_ONLY_REASON)
        return False

    def disable_with_reason(self, reason: str) -> None:
        """Show the form greyed out, saying why."""
        self.disabled_reason = reason
        self.notice.setText(reason)
        self.notice.show()
        for i in range(self.form.rowCount()):
            for role in (
                QFormLayout.ItemRole.FieldRole,
                QFormLayout.ItemRole.SpanningRole,
            ):
                item = self.form.itemAt(i, role)
                widget = item.widget() if item is not None else None
                if widget is not None:
                    widget.setEnabled(False)
        self.submit_button.setEnabled(False)

    def refresh_submit(self) -> None:
        """Enable submit when the form is valid and idle."""
        ok = self.disabled_reason is None and not self.busy and self.can_submit()
        self.submit_button.setEnabled(ok)

    def can_submit(self) -> bool:
        """Whether the fields hold something sendable (subclasses narrow it)."""
        return True

    def show_error(self, exc_or_text: BaseException | str) -> None:
        """Put an error, in words, under the fields."""
        text = (
            exc_or_text if isinstance(exc_or_text, str) else describe_error(exc_or_text)
        )
        self.error_label.setText(text)
        self.error_label.show()
        self.grow_to_fit()

    def clear_messages(self) -> None:
        """Hide the error line and the last answer before a new attempt.

        An answer left under a new error reads as the new call's answer.
        """
        self.error_label.clear()
        self.error_label.hide()
        self.result_view.clear()
        self.result_view.hide()

    def show_result(self, text: str) -> None:
        """Show what the action returned."""
        self.result_view.setPlainText(text)
        self.result_view.show()
        self.grow_to_fit()

    def grow_to_fit(self) -> None:
        """Grow (never shrink) to the height the shown parts need.

        A result or error line appearing under the fields squeezed the
        word-wrapped lines above it: the first line of the cancel dialog's
        explanation was cut off (issue 17).
        """
        layout = self.layout()
        if layout is None:
            return
        layout.activate()
        wanted = layout.totalHeightForWidth(self.width())
        if wanted < 0:
            wanted = layout.totalSizeHint().height()
        wanted = min(wanted, self.tallest_on_screen())
        if self.height() < wanted:
            self.resize(self.width(), wanted)
            self.keep_bottom_on_screen()

    def keep_bottom_on_screen(self) -> None:
        """Move up a dialog that grew past its screen's bottom edge, so its buttons show."""
        free = self.screen().availableGeometry()
        frame = self.frameGeometry()
        if frame.bottom() > free.bottom():
            self.move(
                frame.left(),
                max(free.top(), frame.top() - (frame.bottom() - free.bottom())),
            )

    def tallest_on_screen(self) -> int:
        """The height this dialog may take: its screen's free height less the title bar.

        Past it (a long form with a result, on a 768-pixel screen) the
        buttons would fall off the bottom; the result pane scrolls instead.
        """
        screen = self.screen()
        frame = self.frameGeometry().height() - self.geometry().height()
        return screen.availableGeometry().height() - max(0, frame)

    def set_busy(self, busy: bool) -> None:
        """Grey the submit button while an async call is out."""
        self.busy = busy
        self.refresh_submit()

    # -- submitting -----------------------------------------------------------------------

    def on_submit_clicked(self) -> asyncio.Task[None] | None:
        """Validate, then run `submit()` (sync forms) — async forms override this.

        Returns:
            None here; an async form's override (an `async_slot`) returns the task it starts.
        """
        self.clear_messages()
        self.pending.done()
        if client_of(self.session) is not None:
            self.session.last_command_id = None  # set anew by the command sent
        try:
            result = self.submit()
        except Exception as exc:  # an engine or argument error, shown in the form
            self.show_error(exc)
            return None
        if inspect.isawaitable(result):
            # Client mode: the command is out to the serving process.
            return track(asyncio.ensure_future(self._finish(result)))
        if result is not None:
            self.succeeded.emit(result)
        return None

    async def _finish(self, pending: Awaitable[Any]) -> None:
        self.set_busy(True)
        task = asyncio.ensure_future(pending)
        await asyncio.sleep(0)  # the command goes out and has its id
        client = client_of(self.session)
        command_id = getattr(self.session, "last_command_id", None)
        if client is not None and command_id:
            self.pending.waiting(client, command_id)
        try:
            result = await task
        except NotServed as exc:  # queued, nobody serves: it may be withdrawn
            self.pending.not_served()
            self.show_error(exc)
            return
        except Exception as exc:  # a typed engine error, or CommandTimedOut
            self.pending.done()
            self.show_error(exc)
            return
        finally:
            self.set_busy(False)
        self.pending.done()
        if result is not None:
            self.succeeded.emit(result)

    @staticmethod
    def then(value: Any, after: Callable[[Any], Any]) -> Any:
        """`after(value)` now, or once an awaitable value (a client command) resolves."""
        if not inspect.isawaitable(value):
            return after(value)

        async def later() -> Any:
            return after(await value)

        return later()

    def submit(self) -> Any:
        """Do the action; return its result (None: nothing happened). Raise to show an error."""
        raise RuntimeError("this form does not submit")
