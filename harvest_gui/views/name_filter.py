"""NameFilterEdit: the run list's workflow-name box, listing the names there are as you type."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QStringListModel, Qt
from PySide6.QtWidgets import QCompleter, QLineEdit

if TYPE_CHECKING:
    from collections.abc import Iterable


class NameFilterEdit(QLineEdit):
    """A line edit whose completer offers workflow names, matching any part of them.

    The engine's filter matches a name exactly, so a user who typed part of a
    name saw nothing and no hint (issue 17): the popup lists the names there
    are, and `chosen` fires when one is picked from it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("filterName")
        self.setPlaceholderText("workflow name (pick from the list)")
        self.setAccessibleName("Workflow name filter")
        self.names = QStringListModel(self)
        completer = QCompleter(self.names, self)
        completer.setObjectName("workflowNameCompleter")
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        completer.setCompletionMode(QCompleter.CompletionMode.PopupCompletion)
        self.setCompleter(completer)
        self.chosen = completer.activated

    def offer(self, names: Iterable[str]) -> None:
        """The names the popup lists (sorted, once each)."""
        wanted = sorted(set(names))
        if wanted != self.names.stringList():
            self.names.setStringList(wanted)

    def offered(self) -> list[str]:
        """The names the popup lists."""
        return list(self.names.stringList())
