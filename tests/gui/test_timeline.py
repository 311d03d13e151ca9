"""timeline.py turns histories into lanes, bars and markers; no Qt involved."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harvest_engine import ActivityAttempt, ErrorInfo, HistoryEvent
from harvest_gui.inspect.timeline import (
    CHILDREN_LANE,
    SIGNALS_LANE,
    TIMERS_LANE,
    WORKFLOW_LANE,
    Bar,
    Marker,
    build_timeline,
)

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


class History:
    """Builds a history one event at a time, `seq` numbered from 1."""

    def __init__(self) -> None:
        self.events: list[HistoryEvent] = []

    def add(self, seconds: float, type_: str, **attrs: Any) -> int:
        seq = len(self.events) + 1
        self.events.append(HistoryEvent(seq, type_, at(seconds), attrs))
        return seq


def started(h: History) -> None:
    h.add(
        0,
        "WorkflowStarted",
        workflow_name="order",
        workflow_id="o-1",
        input={},
        attempt=1,
    )


def lane_of(tl: Any, key: str) -> int:
    return [lane.key for lane in tl.lanes].index(key)


def test_empty_history_gives_an_empty_timeline() -> None:
    tl = build_timeline([])
    assert tl.lanes == []
    assert tl.bars == []
    assert tl.markers == []


def test_completed_workflow_spans_start_to_end() -> None:
    h = History()
    started(h)
    h.add(7, "WorkflowCompleted", output="ok")
    tl = build_timeline(h.events)
    assert [lane.key for lane in tl.lanes] == [WORKFLOW_LANE]
    (bar,) = tl.bars
    assert (bar.start, bar.end, bar.result, bar.seq) == (
        at(0).timestamp(),
        at(7).timestamp(),
        "completed",
        1,
    )
    assert tl.start == at(0).timestamp()
    assert tl.end == at(7).timestamp()


def test_running_workflow_ends_at_now() -> None:
    h = History()
    started(h)
    tl = build_timeline(h.events, now=at(30))
    (bar,) = tl.bars
    assert bar.result == "running"
    assert bar.end == at(30).timestamp()


def test_activity_attempts_give_one_bar_each_coloured_by_result() -> None:
    h = History()
    started(h)
    h.add(
        1, "ActivityScheduled", activity_id=1, name="charge", input={}, queue="default"
    )
    done = h.add(
        9, "ActivityCompleted", activity_id=1, name="charge", result="ok", attempt=2
    )
    h.add(10, "WorkflowCompleted", output="ok")
    attempts = [
        ActivityAttempt(
            1, "charge", 1, at(1), at(2), "FAILED", ErrorInfo("Boom", "went boom")
        ),
        ActivityAttempt(1, "charge", 2, at(5), at(9), "COMPLETED", None),
    ]
    tl = build_timeline(h.events, attempts)
    lane = lane_of(tl, "activity:charge")
    bars = tl.bars_in_lane(lane)
    assert [(b.result, b.start, b.end) for b in bars] == [
        ("failed", at(1).timestamp(), at(2).timestamp()),
        ("completed", at(5).timestamp(), at(9).timestamp()),
    ]
    assert "Boom: went boom" in bars[0].detail
    assert bars[1].seq == done
    assert bars[0].seq == 2  # no event for the retried attempt: its scheduling event


def test_a_lost_attempt_is_drawn_lost_beside_its_rerun_with_the_same_number() -> None:
    h = History()
    started(h)
    scheduled = h.add(
        1, "ActivityScheduled", activity_id=1, name="charge", input={}, queue="default"
    )
    done = h.add(
        9, "ActivityCompleted", activity_id=1, name="charge", result="ok", attempt=1
    )
    lost = ErrorInfo("AttemptLost", "the process running this attempt died")
    attempts = [
        ActivityAttempt(1, "charge", 1, at(1), at(6), "LOST", lost),
        ActivityAttempt(1, "charge", 1, at(6), at(9), "COMPLETED", None),
    ]
    tl = build_timeline(h.events, attempts)
    bars = tl.bars_in_lane(lane_of(tl, "activity:charge"))
    assert [(b.result, b.label, b.start, b.end) for b in bars] == [
        ("lost", "charge #1", at(1).timestamp(), at(6).timestamp()),
        ("completed", "charge #1", at(6).timestamp(), at(9).timestamp()),
    ]
    assert "AttemptLost" in bars[0].detail
    assert bars[0].seq == scheduled
    assert bars[1].seq == done


def test_activity_without_attempt_rows_falls_back_to_events() -> None:
    h = History()
    started(h)
    h.add(1, "ActivityScheduled", activity_id=4, name="ship", input={}, queue="default")
    h.add(
        3,
        "ActivityFailed",
        activity_id=4,
        name="ship",
        attempt=1,
        retrying=True,
        error={
            "type": "StartToCloseTimeout",
            "message": "too slow",
            "non_retryable": False,
            "details": None,
        },
    )
    h.add(6, "ActivityCompleted", activity_id=4, name="ship", attempt=2, result=1)
    tl = build_timeline(h.events)
    bars = tl.bars_in_lane(lane_of(tl, "activity:ship"))
    assert [(b.result, b.start, b.end) for b in bars] == [
        ("timed_out", at(1).timestamp(), at(3).timestamp()),
        ("completed", at(3).timestamp(), at(6).timestamp()),
    ]


def test_unfinished_activity_is_pending_until_now() -> None:
    h = History()
    started(h)
    seq = h.add(
        1, "ActivityScheduled", activity_id=1, name="slow", input={}, queue="default"
    )
    tl = build_timeline(h.events, now=at(4))
    (bar,) = tl.bars_in_lane(lane_of(tl, "activity:slow"))
    assert (bar.result, bar.end, bar.seq) == ("pending", at(4).timestamp(), seq)


def test_running_attempt_row_is_drawn_running() -> None:
    h = History()
    started(h)
    h.add(1, "ActivityScheduled", activity_id=1, name="slow", input={}, queue="default")
    tl = build_timeline(
        h.events,
        [ActivityAttempt(1, "slow", 1, at(2), None, "running", None)],
        now=at(5),
    )
    (bar,) = tl.bars_in_lane(lane_of(tl, "activity:slow"))
    assert (bar.result, bar.start, bar.end) == (
        "running",
        at(2).timestamp(),
        at(5).timestamp(),
    )


def test_timers_span_start_to_fire_or_cancel_and_pending_ones_to_their_due_time() -> (
    None
):
    h = History()
    started(h)
    h.add(1, "TimerStarted", timer_id="a", fire_at=at(3).isoformat(), duration=2.0)
    h.add(3, "TimerFired", timer_id="a")
    h.add(4, "TimerStarted", timer_id="b", fire_at=at(60).isoformat(), duration=56.0)
    h.add(5, "TimerCancelled", timer_id="b")
    h.add(6, "TimerStarted", timer_id="c", fire_at=at(100).isoformat(), duration=94.0)
    tl = build_timeline(h.events)
    bars = tl.bars_in_lane(lane_of(tl, TIMERS_LANE))
    assert [(b.result, b.end) for b in bars] == [
        ("fired", at(3).timestamp()),
        ("cancelled", at(5).timestamp()),
        ("pending", at(100).timestamp()),
    ]
    workflow = tl.bars_in_lane(0)[0]
    assert workflow.result == "running"
    assert workflow.end == at(100).timestamp()


def test_signals_and_updates_are_markers_with_their_seq() -> None:
    h = History()
    started(h)
    sig = h.add(2, "SignalReceived", name="approve", payload={"by": "<b>bob</b>"})
    upd = h.add(3, "UpdateAdmitted", name="set_qty", arg=3)
    tl = build_timeline(h.events)
    lane = lane_of(tl, SIGNALS_LANE)
    assert [(m.kind, m.label, m.seq) for m in tl.markers] == [
        ("signal", "approve", sig),
        ("update", "set_qty", upd),
    ]
    assert "<b>bob</b>" in tl.markers[0].detail
    assert tl.item_at(lane, at(2.01).timestamp(), tolerance=0.1) == tl.markers[0]


def test_children_are_bars_from_start_to_result() -> None:
    h = History()
    started(h)
    # The engine's shape: started {command_id, child}, ended {command_id, target, run}.
    h.add(
        1,
        "ChildWorkflowStarted",
        command_id=1,
        child="c1",
        workflow_name="ship",
        input={},
    )
    h.add(
        2,
        "ChildWorkflowStarted",
        command_id=2,
        child="c3",
        workflow_name="bill",
        input={},
    )
    h.add(
        4,
        "ChildWorkflowFailed",
        command_id=1,
        target="c1",
        run="c1",
        error={"type": "X", "message": "lost", "non_retryable": True, "details": None},
    )
    h.add(
        5,
        "ChildWorkflowStarted",
        command_id=3,
        child="c2",
        workflow_name="ship",
        input={},
    )
    h.add(
        6, "ChildWorkflowCompleted", command_id=2, target="c3", run="c3", result="paid"
    )
    tl = build_timeline(h.events, now=at(9))
    bars = tl.bars_in_lane(lane_of(tl, CHILDREN_LANE))
    assert [(b.label, b.result, b.end) for b in bars] == [
        ("ship c1", "failed", at(4).timestamp()),
        ("bill c3", "completed", at(6).timestamp()),
        ("ship c2", "running", at(9).timestamp()),
    ]
    assert "X: lost" in bars[0].detail
    assert "paid" in bars[1].detail


def test_failed_workflow_shows_its_error() -> None:
    h = History()
    started(h)
    h.add(
        2,
        "WorkflowFailed",
        error={"type": "CardDeclined", "message": "no", "details": None},
    )
    (bar,) = build_timeline(h.events).bars
    assert bar.result == "failed"
    assert "CardDeclined: no" in bar.detail


def test_item_at_finds_bars_and_misses_gaps() -> None:
    h = History()
    started(h)
    h.add(1, "ActivityScheduled", activity_id=1, name="a", input={}, queue="default")
    h.add(2, "ActivityCompleted", activity_id=1, name="a", attempt=1, result=1)
    h.add(5, "ActivityScheduled", activity_id=2, name="a", input={}, queue="default")
    h.add(6, "ActivityCompleted", activity_id=2, name="a", attempt=1, result=2)
    tl = build_timeline(h.events)
    lane = lane_of(tl, "activity:a")
    hit = tl.item_at(lane, at(5.5).timestamp())
    assert isinstance(hit, Bar)
    assert hit.seq == 5
    assert tl.item_at(lane, at(3.5).timestamp()) is None
    assert tl.item_at(lane, at(3.5).timestamp(), tolerance=2.0) is not None


def test_local_activities_get_their_own_lane() -> None:
    h = History()
    started(h)
    h.add(
        1,
        "LocalActivityScheduled",
        activity_id=1,
        name="hash",
        input={},
        queue="default",
    )
    h.add(
        2,
        "LocalActivityExhausted",
        activity_id=1,
        name="hash",
        attempt=3,
        error={"type": "E", "message": "m"},
    )
    tl = build_timeline(h.events)
    lane = tl.lanes[lane_of(tl, "local:hash")]
    assert lane.kind == "local_activity"
    (bar,) = tl.bars_in_lane(lane_of(tl, "local:hash"))
    assert bar.result == "failed"


def test_fifty_thousand_events_build_quickly_enough_to_stay_pure() -> None:
    h = History()
    started(h)
    for i in range(25_000):
        h.add(
            i,
            "ActivityScheduled",
            activity_id=i,
            name=f"a{i % 7}",
            input={},
            queue="default",
        )
        h.add(
            i + 0.5,
            "ActivityCompleted",
            activity_id=i,
            name=f"a{i % 7}",
            attempt=1,
            result=i,
        )
    tl = build_timeline(h.events)
    assert len(tl.lanes) == 8
    assert len(tl.bars) == 25_001
    hit = tl.item_at(lane_of(tl, "activity:a0"), at(24_990.2).timestamp())
    assert isinstance(hit, Bar)
    assert hit.label == "a0 #1"
    assert not isinstance(hit, Marker)


def test_timeline_module_imports_no_qt() -> None:
    assert "harvest_gui.inspect.timeline" in sys.modules
    import harvest_gui.inspect.timeline as module

    source = Path(module.__file__).read_text(encoding="utf-8")
    assert "PySide6" not in source
    assert "pyqtgraph" not in source


def test_a_killed_attempt_does_not_take_the_reruns_result() -> None:
    # The crash demo: attempt 1 was SIGKILLed (no event) and re-ran as attempt 1.
    h = History()
    started(h)
    h.add(1, "ActivityScheduled", activity_id=1, name="pack", input={}, queue="q")
    h.add(
        9, "ActivityCompleted", activity_id=1, name="pack", result="packed", attempt=1
    )
    attempts = [
        ActivityAttempt(1, "pack", 1, at(1), at(3), "killed (SIGKILL)", None),
        ActivityAttempt(1, "pack", 1, at(5), at(9), "completed", None),
    ]
    bars = build_timeline(h.events, attempts).bars_in_lane(1)
    assert [b.detail for b in bars] == [
        "pack #1: killed (SIGKILL)",
        "pack #1: result: packed",
    ]
