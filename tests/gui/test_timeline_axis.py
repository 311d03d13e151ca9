"""Timeline axis labels: seconds since start for short runs, clock times for long ones."""

from __future__ import annotations

from datetime import datetime

from harvest_gui.views.timeline_view import clock_label, relative_label


def test_relative_labels_are_seconds_with_the_decimals_the_spacing_needs() -> None:
    assert relative_label(2.0, 1.0) == "2 s"
    assert relative_label(1.5, 0.5) == "1.5 s"
    assert relative_label(0.25, 0.05) == "0.25 s"


def test_clock_labels_read_as_local_time_never_bare_seconds() -> None:
    stamp = datetime(2026, 12, 2, 12, 31, 5, 250_000).timestamp()
    assert clock_label(stamp, 5.0) == "12:31:05"
    assert clock_label(stamp, 0.5).startswith("12:31:05.")
    assert clock_label(stamp, 0.05) == "12:31:05.25"
    assert clock_label(stamp, 7200) == "12-02 12:31"
    assert clock_label(stamp, 86400 * 2) == "2026-12-02"
