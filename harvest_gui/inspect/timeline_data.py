"""The timeline's plain data: lanes, bars and markers, and the lookup a click uses."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Lane:
    """One horizontal row of the timeline.

    Attributes:
        key: a stable identity, e.g. ``"activity:charge_card"``.
        label: the text shown beside the lane.
        kind: ``workflow``, ``activity``, ``local_activity``, ``timer``,
            ``signal`` or ``child``.

    """

    key: str
    label: str
    kind: str


@dataclass(frozen=True)
class Bar:
    """A span on a lane: a workflow run, an activity attempt, a timer or a child.

    Attributes:
        lane: index into `Timeline.lanes`.
        start: epoch seconds.
        end: epoch seconds (``start <= end``).
        result: how it ended: ``completed``, ``failed``, ``timed_out``,
            ``running``, ``fired``, ``cancelled``, ``pending``, ...
        label: a short name (activity name and attempt, timer id, ...).
        seq: the history event this bar came from (a click selects it).
        detail: a plain-text description for the hover tooltip.

    """

    lane: int
    start: float
    end: float
    result: str
    label: str
    seq: int
    detail: str


@dataclass(frozen=True)
class Marker:
    """A point in time on a lane: a signal or an update."""

    lane: int
    at: float
    kind: str
    label: str
    seq: int
    detail: str


@dataclass(frozen=True)
class Timeline:
    """Everything the timeline view draws, in plain data.

    Attributes:
        lanes: top to bottom.
        bars: sorted by (lane, start).
        markers: sorted by (lane, at).
        start: the earliest time shown (epoch seconds).
        end: the latest time shown.

    """

    lanes: list[Lane]
    bars: list[Bar]
    markers: list[Marker]
    start: float
    end: float
    _bar_starts: dict[int, list[float]] = field(default_factory=dict, repr=False)
    _lane_bars: dict[int, list[Bar]] = field(default_factory=dict, repr=False)
    _lane_markers: dict[int, list[Marker]] = field(default_factory=dict, repr=False)
    _marker_ats: dict[int, list[float]] = field(default_factory=dict, repr=False)

    def bars_in_lane(self, lane: int) -> list[Bar]:
        """The bars of one lane, by start time."""
        return self._lane_bars.get(lane, [])

    def item_at(
        self, lane: int, x: float, tolerance: float = 0.0
    ) -> Bar | Marker | None:
        """The marker or bar at time `x` on `lane` (markers win; within `tolerance` seconds).

        Bars are searched by bisection, so this stays fast for 50,000 events.
        """
        markers = self._lane_markers.get(lane, [])
        ats = self._marker_ats.get(lane, [])
        lo = bisect.bisect_left(ats, x - tolerance)
        hi = bisect.bisect_right(ats, x + tolerance)
        if lo < hi:
            return min(markers[lo:hi], key=lambda m: abs(m.at - x))
        bars = self._lane_bars.get(lane, [])
        starts = self._bar_starts.get(lane, [])
        i = bisect.bisect_right(starts, x + tolerance)
        # Walk back over bars starting before x; the longest bar may start early,
        # so stop only after a bounded window of candidates.
        for bar in reversed(bars[max(0, i - 64) : i]):
            if bar.start - tolerance <= x <= bar.end + tolerance:
                return bar
        return None


def indexed_timeline(
    lanes: list[Lane],
    bars: list[Bar],
    markers: list[Marker],
    start: float,
    end: float,
) -> Timeline:
    """A `Timeline` of these items, sorted and indexed per lane for `Timeline.item_at`."""
    bars = sorted(bars, key=lambda bar: (bar.lane, bar.start, bar.seq))
    markers = sorted(markers, key=lambda m: (m.lane, m.at, m.seq))
    lane_bars: dict[int, list[Bar]] = {}
    for bar in bars:
        lane_bars.setdefault(bar.lane, []).append(bar)
    starts = {lane: [bar.start for bar in items] for lane, items in lane_bars.items()}
    lane_markers: dict[int, list[Marker]] = {}
    for marker in markers:
        lane_markers.setdefault(marker.lane, []).append(marker)
    ats = {lane: [m.at for m in items] for lane, items in lane_markers.items()}
    return Timeline(
        lanes, bars, markers, start, end, starts, lane_bars, lane_markers, ats
    )
