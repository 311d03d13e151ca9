"""fit_on_screen(): a window sized and placed so that all of it, frame included, is on a screen."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QMargins, QPoint, QRect
from PySide6.QtGui import QGuiApplication

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

DECORATION = QMargins(8, 32, 8, 8)
"""A window manager's frame (title bar on top) assumed before a window is first shown."""


def available_area(widget: QWidget) -> QRect:
    """The usable part (no panels) of the screen the widget is on, else the primary one."""
    screen = widget.screen() or QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QRect(0, 0, 1366, 768)


def fit_on_screen(
    widget: QWidget, area: QRect | None = None, over: QWidget | None = None
) -> None:
    """Shrink `widget` to fit `area` with its frame, then place it inside, centred on `over`.

    Issue 17: the default height overflowed a 1366x768 screen, and the tool
    windows opened partly below it. A window smaller than the area keeps its
    size; a restored geometry from a bigger or missing screen is pulled back in.

    Args:
        widget: a top-level window, before or after `show()`.
        area: the rectangle to fit in; default the widget's screen's available area.
        over: a window to centre on (the main window), else the current position stays.
    """
    area = available_area(widget) if area is None else area
    frame = _frame_margins(widget)
    room_w = area.width() - frame.left() - frame.right()
    room_h = area.height() - frame.top() - frame.bottom()
    width = max(min(widget.width(), room_w), min(widget.minimumWidth(), room_w))
    height = max(min(widget.height(), room_h), min(widget.minimumHeight(), room_h))
    if (width, height) != (widget.width(), widget.height()):
        widget.resize(width, height)
    if over is not None and over.isVisible():
        centre = over.frameGeometry().center()
        pos = QPoint(centre.x() - width // 2, centre.y() - height // 2)
    else:
        pos = widget.pos()
    left = area.left() + frame.left()
    top = area.top() + frame.top()
    right = area.right() - frame.right() - width + 1
    bottom = area.bottom() - frame.bottom() - height + 1
    x = min(max(pos.x(), left), max(right, left))
    y = min(max(pos.y(), top), max(bottom, top))
    # move() places the frame's corner; geometry() is the client area inside it.
    widget.move(x - frame.left(), y - frame.top())


def _frame_margins(widget: QWidget) -> QMargins:
    if widget.isVisible():
        outer, inner = widget.frameGeometry(), widget.geometry()
        margins = QMargins(
            inner.left() - outer.left(),
            inner.top() - outer.top(),
            outer.right() - inner.right(),
            outer.bottom() - inner.bottom(),
        )
        if margins.top() > 0:
            return margins
    return DECORATION
