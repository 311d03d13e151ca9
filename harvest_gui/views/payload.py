"""PayloadView: a JSON payload as plain text, copyable, cut when huge with a "show all"."""

from __future__ import annotations

from PySide6.QtGui import QFontDatabase, QGuiApplication, QTextOption
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from harvest_gui.inspect import formatting


class PayloadView(QWidget):
    """A titled, read-only plain-text box (payloads are never read as HTML)."""

    def __init__(self, title: str, object_name: str) -> None:
        super().__init__()
        self.setObjectName(object_name)
        self.full_text = ""
        self.title = QLabel(title)
        self.title.setObjectName(object_name + "Title")
        self.size_label = QLabel("")
        self.copy_button = QPushButton("Copy")
        self.copy_button.setObjectName(object_name + "Copy")
        self.copy_button.setAccessibleName(f"Copy {title.lower()}")
        self.copy_button.clicked.connect(self.on_copy)
        self.show_all_button = QPushButton("Show all")
        self.show_all_button.setObjectName(object_name + "ShowAll")
        self.show_all_button.setAccessibleName(f"Show all of {title.lower()}")
        self.show_all_button.clicked.connect(self.on_show_all)
        self.show_all_button.hide()
        self.text = QPlainTextEdit()
        self.text.setObjectName(object_name + "Text")
        self.text.setReadOnly(True)
        self.text.setAccessibleName(title)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        # Wrapped: a one-line value (an output string) read as one clipped line behind
        # a horizontal scroll bar (issue 17); long tokens break anywhere.
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.text.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        head = QHBoxLayout()
        head.addWidget(self.title)
        head.addWidget(self.size_label)
        head.addStretch(1)
        head.addWidget(self.show_all_button)
        head.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(head)
        layout.addWidget(self.text)

    def set_absent(self, why: str) -> None:
        """Fold to one line saying there is no value, and why (nothing to copy).

        An empty box 70 px tall per payload pushed the ones with values out of
        sight (issue 31 §12); the title line says it instead.
        """
        self.full_text = ""
        self.text.clear()
        self.text.setPlaceholderText(why)
        self.text.hide()
        self.show_all_button.hide()
        self.size_label.setText(why)
        self.size_label.setEnabled(False)  # greyed: a hint, not a value
        self.copy_button.setEnabled(False)
        self.copy_button.hide()

    def set_text(self, text: str) -> None:
        """Show `text`; past `formatting.TRUNCATE_AT` characters it is cut until "Show all"."""
        if text == self.full_text and self.text.toPlainText():
            return
        self.copy_button.setEnabled(True)
        self.copy_button.show()
        self.size_label.setEnabled(True)
        self.text.show()
        self.text.setPlaceholderText("")
        self.full_text = text
        shown, cut = formatting.truncate(text)
        self.text.setPlainText(shown + ("\n…" if cut else ""))
        self.show_all_button.setVisible(cut)
        self.size_label.setText(
            f"({formatting.size_text(len(text))}, showing the first "
            f"{formatting.size_text(len(shown))})"
            if cut
            else ""
        )

    def on_show_all(self) -> None:
        """Show the whole text."""
        self.text.setPlainText(self.full_text)
        self.show_all_button.hide()
        self.size_label.setText(f"({formatting.size_text(len(self.full_text))})")

    def on_copy(self) -> None:
        """Copy the whole text (not only the shown part) to the clipboard."""
        QGuiApplication.clipboard().setText(self.full_text)
