"""The Run, Schedules and Tools menus: which commands they hold, with shortcuts and tips."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QMenu, QWidget

from harvest_gui import driving

if TYPE_CHECKING:
    from collections.abc import Callable


class OperationCommands(Protocol):
    """The commands the menus trigger (`Operations` answers them)."""

    def on_start(self) -> None:
        """Run ▸ Start workflow."""

    def on_signal(self) -> None:
        """Run ▸ Send signal."""

    def on_query(self) -> None:
        """Run ▸ Run query."""

    def on_update(self) -> None:
        """Run ▸ Run update."""

    def on_end(self, action: str) -> None:
        """Run ▸ Cancel / Terminate / Pause / Unpause (`action` names it)."""

    def on_reset(self) -> None:
        """Run ▸ Reset run to the selected event."""

    def on_fork(self) -> None:
        """Run ▸ Fork run from a step."""

    def on_bulk(self, action: str) -> None:
        """Run ▸ Runs matching the filter ▸ `action` (cancel, terminate, pause, unpause, signal, reset)."""

    def on_auto_drive(self, on: bool) -> None:
        """Run ▸ Auto-drive."""

    def on_interval(self, ms: int) -> None:
        """Run ▸ Auto-drive interval."""

    def on_until_idle(self) -> object:
        """Run ▸ Run until idle."""

    def on_until_blocked(self) -> object:
        """Run ▸ Run until blocked."""

    def on_determinism(self) -> None:
        """Run ▸ Check determinism."""

    def on_time_travel(self) -> None:
        """Run ▸ Time travel."""

    def on_diff(self) -> None:
        """Run ▸ Diff with another run."""

    def on_export(self) -> None:
        """Run ▸ Export history."""

    def on_new_schedule(self) -> None:
        """Schedules ▸ New schedule."""

    def on_edit_schedule(self) -> None:
        """Schedules ▸ Edit selected schedule."""

    def on_storage(self) -> None:
        """Tools ▸ Storage."""

    def on_purge(self) -> None:
        """Tools ▸ Purge finished runs."""

    def on_crash_demo(self) -> None:
        """Tools ▸ Crash-recovery demo."""


@dataclass
class OperationMenus:
    """The three menus and their actions, kept by `Operations`."""

    window: QWidget
    """Holds the actions, so their shortcuts work anywhere in it."""
    run: QMenu
    schedules: QMenu
    tools: QMenu
    interval_menu: QMenu
    """Run ▸ Auto-drive interval."""
    interval_group: QActionGroup
    """The interval choices, one checked."""
    actions: dict[str, QAction] = field(default_factory=dict)
    """Every command by key ("start", "signal", …)."""

    def add(
        self,
        menu: QMenu,
        key: str,
        text: str,
        slot: Callable[..., object],
        shortcut: str | None = None,
        tip: str = "",
    ) -> QAction:
        """One command: a QAction on the window (so its shortcut works anywhere) and in `menu`."""
        action = QAction(text, self.window)
        action.setObjectName(f"action_{key}")
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        action.setStatusTip(tip)
        action.triggered.connect(slot)
        self.window.addAction(action)
        menu.addAction(action)
        self.actions[key] = action
        return action


def _menu(title: str, name: str, window: QWidget) -> QMenu:
    menu = QMenu(title, window)
    menu.setObjectName(name)
    return menu


def build_menus(
    window: QWidget, ops: OperationCommands, interval_ms: int
) -> OperationMenus:
    """The Run, Schedules and Tools menus of `ops`'s commands, on `window`.

    Args:
        window: the main window, which holds the actions.
        ops: answers the commands.
        interval_ms: the auto-drive interval checked at first.

    """
    interval_menu = _menu("Auto-drive &interval", "intervalMenu", window)
    menus = OperationMenus(
        window=window,
        run=_menu("&Run", "runMenu", window),
        schedules=_menu("S&chedules", "scheduleMenu", window),
        tools=_menu("&Tools", "toolsMenu", window),
        interval_menu=interval_menu,
        interval_group=QActionGroup(window),
    )
    m, add = menus.run, menus.add
    add(m, "start", "&Start workflow…", ops.on_start, "Ctrl+N", "Start a run")
    add(m, "signal", "Send &signal…", ops.on_signal, "Ctrl+Shift+S")
    add(m, "query", "Run &query…", ops.on_query, "Ctrl+Shift+Q")
    add(m, "update", "Run &update…", ops.on_update, "Ctrl+Shift+U")
    add(m, "cancel", "&Cancel run…", lambda: ops.on_end("cancel"), "Ctrl+Shift+C")
    add(
        m,
        "terminate",
        "&Terminate run…",
        lambda: ops.on_end("terminate"),
        "Ctrl+Shift+T",
    )
    # H for hold, G for go: P and U are the purge and update forms'.
    add(m, "pause", "Pa&use run…", lambda: ops.on_end("pause"), "Ctrl+Shift+H")
    add(m, "unpause", "U&npause run…", lambda: ops.on_end("unpause"), "Ctrl+Shift+G")
    add(m, "reset", "&Reset run to the selected event…", ops.on_reset, "Ctrl+Shift+R")
    add(m, "fork", "&Fork run from a step…", ops.on_fork, "Ctrl+Shift+B")  # B: branch
    bulk = m.addMenu("Runs matching the &filter")
    bulk.setObjectName("bulkMenu")
    for kind, text, keys in (
        ("cancel", "&Cancel the matching runs…", "Ctrl+Alt+C"),
        ("terminate", "&Terminate the matching runs…", "Ctrl+Alt+T"),
        ("pause", "&Pause the matching runs…", "Ctrl+Alt+H"),
        ("unpause", "&Unpause the matching runs…", "Ctrl+Alt+G"),
        ("signal", "&Signal the matching runs…", "Ctrl+Alt+S"),
        ("reset", "&Reset the matching runs…", "Ctrl+Alt+R"),
    ):
        add(bulk, f"{kind}_many", text, lambda _=False, k=kind: ops.on_bulk(k), keys)
    m.addSeparator()
    auto = add(m, "auto_drive", "&Auto-drive", ops.on_auto_drive, "Ctrl+D")
    auto.setCheckable(True)
    m.addMenu(interval_menu)
    for ms in driving.INTERVALS_MS:
        action = interval_menu.addAction(f"{ms} ms" if ms < 1000 else f"{ms // 1000} s")
        action.setObjectName(f"action_interval_{ms}")
        action.setCheckable(True)
        action.setChecked(ms == interval_ms)
        action.triggered.connect(lambda _=False, v=ms: ops.on_interval(v))
        menus.interval_group.addAction(action)
    add(m, "until_idle", "Run until &idle", ops.on_until_idle, "Ctrl+I")
    add(m, "until_blocked", "Run until &blocked", ops.on_until_blocked, "Ctrl+B")
    m.addSeparator()
    add(m, "determinism", "Check &determinism", ops.on_determinism, "Ctrl+Shift+D")
    add(m, "time_travel", "Time tra&vel…", ops.on_time_travel, "Ctrl+T")
    add(m, "diff", "Di&ff with another run…", ops.on_diff, "Ctrl+Shift+F")
    add(m, "export", "&Export history…", ops.on_export, "Ctrl+E")
    s = menus.schedules
    add(s, "new_schedule", "&New schedule…", ops.on_new_schedule, "Ctrl+Shift+N")
    add(
        s,
        "edit_schedule",
        "&Edit selected schedule…",
        ops.on_edit_schedule,
        "Ctrl+Shift+E",
    )
    t = menus.tools
    add(t, "storage", "&Storage…", ops.on_storage, "Ctrl+Shift+I")
    add(t, "purge", "&Purge finished runs…", ops.on_purge, "Ctrl+Shift+P")
    t.addSeparator()
    add(t, "crash_demo", "&Crash-recovery demo", ops.on_crash_demo, "Ctrl+Shift+K")
    return menus
