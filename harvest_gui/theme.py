"""Fusion palettes (light, dark, system) and the colours of run states and timeline results."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

_STATE_COLOURS = {
    # state: (light theme, dark theme)
    "RUNNING": ("#1d4ed8", "#60a5fa"),
    "ENQUEUED": ("#0e7490", "#22d3ee"),  # waits for its queue (flow control)
    "COMPLETED": ("#15803d", "#4ade80"),
    "FAILED": ("#b91c1c", "#f87171"),
    "CANCELLED": ("#6b7280", "#9ca3af"),
    "TERMINATED": ("#9a3412", "#fb923c"),
    "TIMED_OUT": ("#b45309", "#fbbf24"),
    "CONTINUED_AS_NEW": ("#6d28d9", "#a78bfa"),
    # not a state: a RUNNING run held by rt.pause (its own filter box)
    "PAUSED": ("#a16207", "#facc15"),
    # not a state: the run list's mark for a run the engine flags as damaged
    "DAMAGED": ("#be185d", "#f472b6"),
}

RESULT_COLOURS = {
    "completed": "#16a34a",
    "fired": "#0d9488",
    "failed": "#dc2626",
    "timed_out": "#d97706",
    "lost": "#be185d",
    "terminated": "#ea580c",
    "running": "#3b82f6",
    "pending": "#94a3b8",
    "cancelled": "#6b7280",
    "continued": "#7c3aed",
}
"""Timeline bar colours by result; each result is also named in the hover text."""


def dark_palette() -> QPalette:
    """A dark palette for the Fusion style (a platform theme is not relied on)."""
    p = QPalette()
    window, base, alt = QColor("#262626"), QColor("#1b1b1b"), QColor("#2f2f2f")
    text, bright, link = QColor("#e6e6e6"), QColor("#ffffff"), QColor("#7ab7ff")
    # Hint text (placeholders, and form hints drawn in palette(mid)) at a contrast
    # of 4.5 or more on both the window and an input (WCAG AA); #3c3c3c and
    # #8a8a8a were hard to read (issue 31 §15).
    hint = QColor("#9e9e9e")
    disabled = QColor("#8c8c8c")
    for role, colour in (
        (QPalette.ColorRole.Window, window),
        (QPalette.ColorRole.WindowText, text),
        (QPalette.ColorRole.Base, base),
        (QPalette.ColorRole.AlternateBase, alt),
        (QPalette.ColorRole.Text, text),
        (QPalette.ColorRole.Button, alt),
        (QPalette.ColorRole.ButtonText, text),
        (QPalette.ColorRole.BrightText, bright),
        (QPalette.ColorRole.Highlight, QColor("#2f6fd6")),
        (QPalette.ColorRole.HighlightedText, bright),
        (QPalette.ColorRole.ToolTipBase, alt),
        (QPalette.ColorRole.ToolTipText, text),
        (QPalette.ColorRole.PlaceholderText, hint),
        (QPalette.ColorRole.Link, link),
        (QPalette.ColorRole.Mid, hint),
        (QPalette.ColorRole.Dark, QColor("#151515")),
    ):
        p.setColor(role, colour)
    for role in (
        QPalette.ColorRole.Text,
        QPalette.ColorRole.ButtonText,
        QPalette.ColorRole.WindowText,
    ):
        p.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    # A disabled input is a grey slab, not the dark well of one that takes
    # typing; on the input colour it looked enabled (issue 31 §15).
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Base, QColor("#333333"))
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Button, window)
    p.setColor(
        QPalette.ColorGroup.Disabled, QPalette.ColorRole.PlaceholderText, disabled
    )
    return p


def system_prefers_dark() -> bool:
    """Whether the platform reports a dark colour scheme (Unknown counts as light)."""
    hints = QGuiApplication.styleHints()
    return hints.colorScheme() == Qt.ColorScheme.Dark


def apply_theme(app: QApplication, theme: str) -> bool:
    """Set Fusion with the light or dark palette; ``system`` follows the platform.

    Returns:
        True when the dark palette is now in use.

    """
    app.setStyle("Fusion")
    dark = theme == "dark" or (theme == "system" and system_prefers_dark())
    style = app.style()
    app.setPalette(dark_palette() if dark else style.standardPalette())
    app.setProperty("harvest_dark", dark)
    return dark


def is_dark() -> bool:
    """Whether the running app uses the dark palette."""
    app = QApplication.instance()
    return bool(app is not None and app.property("harvest_dark"))


def error_style() -> str:
    """The style sheet of an error or refusal line in the current theme.

    A fixed dark red read at about 2.4:1 on the dark palette (issue 31 §15):
    the FAILED colour of the theme is legible on both.
    """
    return f"color: {state_colour('FAILED').name()};"


def ok_style() -> str:
    """The style sheet of a line saying all is well, in the current theme."""
    return f"color: {state_colour('COMPLETED').name()};"


def state_colour(state: str) -> QColor:
    """The text colour of a run state in the current theme."""
    light, dark = _STATE_COLOURS.get(state, ("#374151", "#d1d5db"))
    return QColor(dark if is_dark() else light)
