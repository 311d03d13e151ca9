"""The Timeline tab: lanes of bars and markers in a pyqtgraph plot, with hover and click."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from harvest_gui.inspect.timeline import Bar, Marker, Timeline, build_timeline
from harvest_gui.theme import is_dark
from harvest_gui.views.timeline_items import LaneBarsItem, marker_spots

if TYPE_CHECKING:
    from harvest_engine import ActivityAttempt, HistoryEvent


RELATIVE_SPAN_S = 120.0
"""Runs shorter than this get "seconds since start" on the axis instead of clock times."""

HOVER_HINT = "Hover over a bar or marker; click it to open its event in History."

WHEEL_SCALE = -1.0 / 6.0
"""pyqtgraph's wheel factor: one notch (120) zooms to 1.02**(120/6) = two thirds of the span.

(pyqtgraph's default, -1/8, is three quarters; -1/2 was tried and jumped 30x in three notches.)"""


def _decimals(spacing: float) -> int:
    """Decimals a tick label needs at this tick spacing (0 for whole seconds)."""
    if spacing >= 1:
        return 0
    return 1 if spacing >= 0.1 else 2 if spacing >= 0.01 else 3


def relative_label(value: float, spacing: float) -> str:
    """A tick as seconds since the run started: ``0 s``, ``1.5 s``."""
    return f"{value:.{_decimals(spacing)}f} s"


def clock_label(stamp: float, spacing: float) -> str:
    """A tick as local wall-clock time: ``12:31:05`` (``12:31:05.25`` below a second)."""
    at = datetime.fromtimestamp(stamp)
    if spacing >= 86400:
        return at.strftime("%Y-%m-%d")
    if spacing >= 3600:
        return at.strftime("%m-%d %H:%M")
    text = at.strftime("%H:%M:%S")
    decimals = _decimals(spacing)
    if decimals:
        text += f"{at.microsecond / 1e6:.{decimals}f}"[1:]
    return text


class OffsetDateAxis(pg.DateAxisItem):  # type: ignore[misc]
    """Time ticks for data plotted as seconds after `origin`.

    Short runs (`relative`) read as seconds since the start; longer ones as
    local clock times (HH:MM:SS), never pyqtgraph's bare "02.000" seconds.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(orientation="bottom", **kwargs)
        self.origin = 0.0
        self.relative = False

    def tickValues(self, min_val: float, max_val: float, size: float) -> Any:
        """Round seconds (relative) or wall-clock ticks, returned relative to the origin."""
        if self.relative:
            return pg.AxisItem.tickValues(self, min_val, max_val, size)
        levels = super().tickValues(min_val + self.origin, max_val + self.origin, size)
        return [
            (spacing, [v - self.origin for v in values]) for spacing, values in levels
        ]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> Any:
        """Tick labels: seconds since start, or local clock time."""
        if self.relative:
            return [relative_label(v, spacing) for v in values]
        return [clock_label(v + self.origin, spacing) for v in values]


class TimelineView(QWidget):
    """Time on x, one lane per workflow/activity/timers/signals/children.

    Wheel zooms, drag pans (x only), hovering names the item under the
    mouse, and clicking an item emits `event_clicked(seq)`.
    """

    event_clicked = Signal(int)

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("timelineView")
        self.plot = pg.PlotWidget(axisItems={"bottom": OffsetDateAxis()})
        self.plot.setObjectName("timelinePlot")
        self.plot.setAccessibleName("Run timeline")
        self.plot.setAccessibleDescription(
            "Lanes of activity attempts, timers, signals and children over time"
        )
        self.restyle()
        self.plot.setLabel("bottom", "local time")
        self.plot.invertY(True)
        self.plot.showGrid(x=True, alpha=0.25)
        self.plot.setMouseEnabled(x=True, y=False)
        self.plot.hideButtons()
        self.plot.setMenuEnabled(False)
        self.plot.getViewBox().state["wheelScaleFactor"] = WHEEL_SCALE
        self.hover = QLabel(HOVER_HINT)
        self.hover.setObjectName("timelineHover")
        self.hover.setTextFormat(Qt.TextFormat.PlainText)
        self.hover.setWordWrap(True)
        self.fit_button = QPushButton("&Fit whole run")
        self.fit_button.setObjectName("timelineFitButton")
        self.fit_button.setToolTip(
            "Show the whole run again and follow it as it grows (Ctrl+0)"
        )
        self.fit_button.setShortcut(QKeySequence("Ctrl+0"))
        self.fit_button.clicked.connect(self.fit)
        bottom = QHBoxLayout()
        bottom.addWidget(self.hover, 1)
        bottom.addWidget(self.fit_button, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot, 1)
        layout.addLayout(bottom)
        # True once the user zoomed or panned: a redraw of the same run then keeps the
        # user's framing; otherwise every redraw frames the whole run (a live run grows).
        self.user_framed = False
        self.plot.getViewBox().sigRangeChangedManually.connect(self.on_user_framed)
        self.timeline = Timeline([], [], [], 0.0, 0.0)
        self._scatter: pg.ScatterPlotItem | None = None
        self.plot.scene().sigMouseMoved.connect(self.on_mouse_moved)
        self.plot.scene().sigMouseClicked.connect(self.on_mouse_clicked)

    def restyle(self) -> None:
        """Apply the current theme's plot colours (after a theme switch too)."""
        dark = is_dark()
        self.plot.setBackground("#1b1b1b" if dark else "w")
        fg = "#e6e6e6" if dark else "#222222"
        for name in ("left", "bottom"):
            axis = self.plot.getAxis(name)
            axis.setPen(fg)
            axis.setTextPen(fg)

    def show_history(
        self,
        history: list[HistoryEvent],
        attempts: list[ActivityAttempt],
        now: datetime | None = None,
    ) -> None:
        """Rebuild the plot from a history (the pure `build_timeline` does the work)."""
        self.show_timeline(build_timeline(history, attempts, now))

    def show_timeline(self, timeline: Timeline) -> None:
        """Draw `timeline`, replacing what was shown."""
        same_run = bool(self.timeline.lanes) and self.timeline.start == timeline.start
        if not same_run:
            # Another run: its framing and its hover text start afresh.
            self.user_framed = False
            self.hover.setText(HOVER_HINT)
        keep_range = same_run and self.user_framed
        old_range = self.plot.getViewBox().viewRange()[0]
        self.timeline = timeline
        self.plot.clear()
        axis = self.plot.getAxis("bottom")
        assert isinstance(axis, OffsetDateAxis)
        axis.origin = timeline.start
        axis.relative = timeline.end - timeline.start < RELATIVE_SPAN_S
        self.plot.setLabel(
            "bottom", "seconds since start" if axis.relative else "local time"
        )
        origin = timeline.start
        for lane in range(len(timeline.lanes)):
            bars = timeline.bars_in_lane(lane)
            if bars:
                self.plot.addItem(LaneBarsItem(lane, bars, origin))
        self._scatter = None
        if timeline.markers:
            self._scatter = pg.ScatterPlotItem(
                spots=marker_spots(timeline.markers, origin)
            )
            self.plot.addItem(self._scatter)
        self.plot.getAxis("left").setTicks(
            [[(i, lane.label) for i, lane in enumerate(timeline.lanes)]]
        )
        self.plot.setYRange(-0.7, max(len(timeline.lanes) - 0.3, 0.7), padding=0)
        if keep_range:
            self.plot.setXRange(old_range[0], old_range[1], padding=0)
        else:
            self._frame_whole_run()

    def _frame_whole_run(self) -> None:
        span = max(self.timeline.end - self.timeline.start, 1.0)
        self.plot.setXRange(-span * 0.02, span * 1.02, padding=0)

    def on_user_framed(self, _mask: Any = None) -> None:
        """The user zoomed or panned: redraws of this run keep that framing."""
        self.user_framed = True

    def fit(self) -> None:
        """Frame the whole run again, and follow it as it grows."""
        self.user_framed = False
        self._frame_whole_run()

    def item_at_scene(self, pos: QPointF) -> Bar | Marker | None:
        """The bar or marker under a scene position."""
        vb = self.plot.getViewBox()
        if not self.plot.sceneBoundingRect().contains(pos):
            return None
        point = vb.mapSceneToView(pos)
        lane = round(point.y())
        if not 0 <= lane < len(self.timeline.lanes):
            return None
        if abs(point.y() - lane) > 0.45:
            return None
        pixel = vb.viewPixelSize()[0]
        return self.timeline.item_at(
            lane, point.x() + self.timeline.start, tolerance=4 * pixel
        )

    def on_mouse_moved(self, pos: QPointF) -> None:
        """Name the item under the mouse (plain text)."""
        item = self.item_at_scene(pos)
        self.hover.setText(HOVER_HINT if item is None else item.detail)
        self.plot.setToolTip("")

    def on_mouse_clicked(self, event: Any) -> None:
        """Emit the clicked item's event seq."""
        if event.button() != Qt.MouseButton.LeftButton:
            return
        item = self.item_at_scene(event.scenePos())
        if item is not None:
            event.accept()
            self.event_clicked.emit(item.seq)
