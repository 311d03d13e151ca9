"""LoadCodeDialog: File ▸ Load workflow code… — a module name or a .py file, remembered per file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QWidget,
)

from harvest_gui.forms.base import ActionDialog

if TYPE_CHECKING:
    from collections.abc import Callable


class LoadCodeDialog(ActionDialog):
    """Ask for workflow code and hand it to `load` (the window loads it into the open file).

    Works in every mode: a writer registers the code and runs with it, a
    client uses it for the forms, a read-only window for replays.

    Signals:
        succeeded(str): the code that was loaded.
    """

    def __init__(
        self,
        session: Any,
        load: Callable[[str], str],
        current: str | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(
            session, "Load workflow code", "&Load", "loadCodeDialog", parent
        )
        self.load = load
        self.spec = QLineEdit(current or "")
        self.spec.setObjectName("codeSpecEdit")
        self.spec.setAccessibleName("Module name or .py file")
        self.spec.setPlaceholderText("package.module, or /path/to/workflows.py")
        self.spec.textChanged.connect(lambda _t: self.refresh_submit())
        browse = QPushButton("&Browse…")
        browse.setObjectName("browseCodeButton")
        browse.setAutoDefault(False)
        browse.clicked.connect(self.on_browse)
        row = QWidget()
        line = QHBoxLayout(row)
        line.setContentsMargins(0, 0, 0, 0)
        line.addWidget(self.spec, 1)
        line.addWidget(browse)
        self.form.addRow("&Code", row)
        self.notice.setText(
            "The module defines register(rt), or lists WORKFLOWS and ACTIVITIES "
            "(optionally QUERIES and UPDATES). It is remembered for this file and "
            "loaded again when the file opens."
        )
        self.notice.show()
        self.refresh_submit()

    def on_browse(self) -> None:
        """Pick a .py file (non-modal)."""
        dialog = QFileDialog(self, "Workflow code")
        dialog.setObjectName("codeFileDialog")
        dialog.setNameFilter("Python files (*.py)")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(self.spec.setText)
        dialog.open()

    def can_submit(self) -> bool:
        """Something is typed."""
        return bool(self.spec.text().strip())

    def submit(self) -> Any:
        """Load the code; its words (what it registered) become the result."""
        spec = self.spec.text().strip()
        self.show_result(self.load(spec))
        return spec
