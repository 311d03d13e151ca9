"""The Run, Schedules and Tools menus: which commands they hold, with shortcuts and tips."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QAction, QActionGroup, QKeySequence

from harvest_gui import driving

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMenu

    from harvest_gui.views.operations import Operations


def add_action(
    ops: Operations,
    menu: QMenu,
    key: str,
    text: str,
    slot: Any,
    shortcut: str | None = None,
    tip: str = "",
) -> QAction:
    """One command: a QAction on the window (so its shortcut works anywhere) and in `menu`."""
    action = QAction(text, ops.window)
    action.setObjectName(f"action_{key}")
    if shortcut:
        action.setShortcut(QKeySequence(shortcut))
    action.setStatusTip(tip)
    action.triggered.connect(slot)
    ops.window.addAction(action)
    menu.addAction(action)
    ops.actions[key] = action
    return action


def build_menus(ops: Operations) -> None:
    """Fill the Run, Schedules and Tools menus of `ops` with its commands."""
    m = ops.run_menu
    add_action(
        ops, m, "start", "&Start workflow…", ops.on_start, "Ctrl+N", "Start a run"
    )
    add_action(ops, m, "signal", "Send &signal…", ops.on_signal, "Ctrl+Shift+S")
    add_action(ops, m, "query", "Run &query…", ops.on_query, "Ctrl+Shift+Q")
    add_action(ops, m, "update", "Run &update…", ops.on_update, "Ctrl+Shift+U")
    add_action(
        ops, m, "cancel", "&Cancel run…", lambda: ops.on_end("cancel"), "Ctrl+Shift+C"
    )
    add_action(
        ops,
        m,
        "terminate",
        "&Terminate run…",
        lambda: ops.on_end("terminate"),
        "Ctrl+Shift+T",
    )
    m.addSeparator()
    auto = add_action(ops, m, "auto_drive", "&Auto-drive", ops.on_auto_drive, "Ctrl+D")
    auto.setCheckable(True)
    ops.interval_menu = m.addMenu("Auto-drive &interval")
    ops.interval_menu.setObjectName("intervalMenu")
    ops.interval_group = QActionGroup(ops)
    chosen = ops.interval_ms()
    for ms in driving.INTERVALS_MS:
        action = ops.interval_menu.addAction(
            f"{ms} ms" if ms < 1000 else f"{ms // 1000} s"
        )
        action.setObjectName(f"action_interval_{ms}")
        action.setCheckable(True)
        action.setChecked(ms == chosen)
        action.triggered.connect(lambda _=False, v=ms: ops.on_interval(v))
        ops.interval_group.addAction(action)
    add_action(ops, m, "until_idle", "Run until &idle", ops.on_until_idle, "Ctrl+I")
    add_action(
        ops, m, "until_blocked", "Run until &blocked", ops.on_until_blocked, "Ctrl+B"
    )
    m.addSeparator()
    add_action(
        ops, m, "determinism", "Check &determinism", ops.on_determinism, "Ctrl+Shift+D"
    )
    add_action(ops, m, "time_travel", "Time tra&vel…", ops.on_time_travel, "Ctrl+T")
    add_action(ops, m, "diff", "Di&ff with another run…", ops.on_diff, "Ctrl+Shift+F")
    add_action(ops, m, "export", "&Export history…", ops.on_export, "Ctrl+E")
    s = ops.schedule_menu
    add_action(
        ops, s, "new_schedule", "&New schedule…", ops.on_new_schedule, "Ctrl+Shift+N"
    )
    add_action(
        ops,
        s,
        "edit_schedule",
        "&Edit selected schedule…",
        ops.on_edit_schedule,
        "Ctrl+Shift+E",
    )
    t = ops.tools_menu
    add_action(ops, t, "storage", "&Storage…", ops.on_storage, "Ctrl+Shift+I")
    add_action(ops, t, "purge", "&Purge finished runs…", ops.on_purge, "Ctrl+Shift+P")
    t.addSeparator()
    add_action(
        ops, t, "crash_demo", "&Crash-recovery demo", ops.on_crash_demo, "Ctrl+Shift+K"
    )
