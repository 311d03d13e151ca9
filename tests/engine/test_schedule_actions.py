"""Firing a schedule by hand: trigger_schedule (one run now) and backfill_schedule (a past range)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harvest_engine import (
    ExecutionFilter,
    ManualClock,
    Overlap,
    RunState,
    Schedule,
    ScheduleNotFound,
    SqliteRuntime,
    UnknownWorkflow,
    WorkflowContext,
    WorkflowSchedule,
    workflow,
)
from harvest_engine.schedules import schedule_workflow_id

Open = Callable[..., SqliteRuntime]
T0 = datetime(2030, 1, 1, tzinfo=UTC)


@workflow
async def report(ctx: WorkflowContext, payload: Any) -> Any:
    await ctx.wait_for_signal("done")
    return payload


def with_schedule(
    open_rt: Open, overlap: Overlap = Overlap.SKIP, max_active_runs: int = 1
) -> SqliteRuntime:
    rt = open_rt()
    rt.register_workflow(report)
    rt.upsert_schedule(
        WorkflowSchedule(
            "report",
            Schedule.every("1h"),
            input={"full": True},
            overlap=overlap,
            max_active_runs=max_active_runs,
        )
    )
    return rt


def runs(rt: SqliteRuntime) -> list[Any]:
    return rt.list_executions(ExecutionFilter().workflow_name("report")).executions


async def test_a_trigger_starts_one_run_now_with_the_schedule_input(
    open_rt: Open,
) -> None:
    rt = with_schedule(open_rt)

    exec_id = rt.trigger_schedule("report")

    assert exec_id is not None
    started = rt.load_history(exec_id)[0]
    assert started.attrs["input"] == {"full": True}
    assert started.at == T0
    detail = rt.describe(exec_id)
    assert detail.workflow_id.startswith(schedule_workflow_id("report", T0))
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="done")
    # The schedule's own next slot is untouched.
    assert rt.list_schedules()[0].next_fire_at == T0 + timedelta(hours=1)


def test_two_triggers_under_allow_all_start_two_runs(open_rt: Open) -> None:
    rt = with_schedule(open_rt, overlap=Overlap.ALLOW_ALL)

    first = rt.trigger_schedule("report")
    second = rt.trigger_schedule("report")

    assert first is not None
    assert second is not None
    assert first != second
    assert len(runs(rt)) == 2


def test_a_trigger_under_skip_with_a_run_still_running_starts_nothing(
    open_rt: Open,
) -> None:
    rt = with_schedule(open_rt)
    assert rt.trigger_schedule("report") is not None

    assert rt.trigger_schedule("report") is None
    assert len(runs(rt)) == 1


def test_a_paused_schedule_can_still_be_triggered(open_rt: Open) -> None:
    rt = with_schedule(open_rt)
    rt.pause_schedule("report")

    assert rt.trigger_schedule("report") is not None


def test_trigger_and_backfill_of_an_unknown_schedule_are_refused(open_rt: Open) -> None:
    rt = open_rt()
    rt.register_workflow(report)

    with pytest.raises(ScheduleNotFound):
        rt.trigger_schedule("report")
    with pytest.raises(ScheduleNotFound):
        rt.backfill_schedule("report", T0, T0 + timedelta(hours=2))
    assert runs(rt) == []


def test_a_schedule_whose_workflow_is_not_registered_starts_nothing(
    open_rt: Open,
) -> None:
    rt = with_schedule(open_rt)
    rt.close()
    bare = open_rt()

    with pytest.raises(UnknownWorkflow):
        bare.trigger_schedule("report")
    assert bare.list_executions(ExecutionFilter()).executions == []


def test_a_backfill_starts_each_slot_oldest_first_with_its_own_workflow_id(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = with_schedule(open_rt, overlap=Overlap.ALLOW_ALL)
    clock.set(T0 + timedelta(days=1))
    start = T0 - timedelta(hours=3)

    started = rt.backfill_schedule("report", start, T0 - timedelta(minutes=30))

    slots = [T0 - timedelta(hours=h) for h in (3, 2, 1)]
    assert [rt.describe(e).workflow_id for e in started] == [
        schedule_workflow_id("report", s) for s in slots
    ]
    assert [str(r.exec_id) for r in reversed(runs(rt))] == [str(e) for e in started]


def test_a_backfill_skips_slots_that_already_have_a_run(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = with_schedule(open_rt, overlap=Overlap.ALLOW_ALL)
    clock.set(T0 + timedelta(days=1))
    first = rt.backfill_schedule("report", T0 - timedelta(hours=2), T0)

    again = rt.backfill_schedule("report", T0 - timedelta(hours=3), T0)

    assert len(first) == 3
    assert [rt.describe(e).workflow_id for e in again] == [
        schedule_workflow_id("report", T0 - timedelta(hours=3))
    ]


def test_a_skip_backfill_stops_at_max_active_runs(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = with_schedule(open_rt, overlap=Overlap.SKIP, max_active_runs=2)
    clock.set(T0 + timedelta(days=1))

    started = rt.backfill_schedule("report", T0 - timedelta(hours=5), T0)

    assert [rt.describe(e).workflow_id for e in started] == [
        schedule_workflow_id("report", T0 - timedelta(hours=h)) for h in (5, 4)
    ]


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (T0, T0 - timedelta(hours=1)),
        (datetime(2030, 1, 1), T0),  # noqa: DTZ001 -- naive on purpose
        (T0 - timedelta(days=100), T0),  # 2,400 slots
    ],
)
def test_a_bad_backfill_range_is_refused_and_starts_nothing(
    open_rt: Open, start: datetime, end: datetime
) -> None:
    rt = with_schedule(open_rt, overlap=Overlap.ALLOW_ALL)

    with pytest.raises(ValueError, match="backfill_schedule"):
        rt.backfill_schedule("report", start, end)
    assert runs(rt) == []
