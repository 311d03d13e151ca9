"""pyqtgraph items for the timeline: one precomputed QPicture per lane of bars."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QBrush, QColor, QPainter, QPen, QPicture

from harvest_gui.theme import RESULT_COLOURS

if TYPE_CHECKING:
    from PySide6.QtWidgets import QStyleOptionGraphicsItem, QWidget

    from harvest_gui.inspect.timeline import Bar

BAR_HEIGHT = 0.6


class LaneBarsItem(pg.GraphicsObject):  # type: ignore[misc]
    """The bars of one lane, drawn from a QPicture recorded once.

    The bounding rect is exact (pyqtgraph warns that a loose one breaks
    auto-range and picking). Times are seconds relative to the timeline
    start, so float precision holds at millisecond zoom.
    """

    def __init__(self, lane: int, bars: list[Bar], origin: float) -> None:
        super().__init__()
        self.lane = lane
        self.bars = bars
        self.origin = origin
        self._picture = QPicture()
        self._rect = QRectF()
        self._record()

    def _record(self) -> None:
        painter = QPainter(self._picture)
        top = self.lane - BAR_HEIGHT / 2
        x0 = min((b.start for b in self.bars), default=self.origin) - self.origin
        x1 = max((b.end for b in self.bars), default=self.origin) - self.origin
        by_colour: dict[str, list[QRectF]] = {}
        for bar in self.bars:
            colour = RESULT_COLOURS.get(bar.result, "#64748b")
            by_colour.setdefault(colour, []).append(
                QRectF(
                    bar.start - self.origin,
                    top,
                    max(bar.end - bar.start, 0.0),
                    BAR_HEIGHT,
                )
            )
        # One drawRects call per colour: fewer painter calls is faster, and a
        # per-bar call loop over 25k bars crashed PySide6 6.12 on Python 3.11
        # ("none_dealloc": a refcount leak on None per void call).
        for colour, rects in by_colour.items():
            # Cosmetic: a bar too short for one pixel still shows as a line.
            pen = QPen(QColor(colour).darker(130))
            pen.setCosmetic(True)
            painter.setPen(pen)
            painter.setBrush(QBrush(QColor(colour)))
            painter.drawRects(rects)
        painter.end()
        self._rect = QRectF(QPointF(x0, top), QPointF(x1, top + BAR_HEIGHT))

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionGraphicsItem,
        widget: QWidget | None = None,
    ) -> None:
        """Replay the recorded picture."""
        painter.drawPicture(0, 0, self._picture)

    def boundingRect(self) -> QRectF:
        """The exact extent of the bars."""
        return QRectF(self._rect)


def marker_spots(markers: list[Any], origin: float) -> list[dict[str, Any]]:
    """Scatter spots for signal/update markers, each carrying its event seq."""
    colours = {"signal": "#f59e0b", "update": "#ec4899"}
    return [
        {
            "pos": (m.at - origin, m.lane),
            "data": m.seq,
            "brush": pg.mkBrush(colours.get(m.kind, "#f59e0b")),
            "symbol": "t" if m.kind == "signal" else "d",
            "size": 13,
            "pen": pg.mkPen("#111111"),
        }
        for m in markers
    ]
