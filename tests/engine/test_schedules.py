"""Schedules: specs and slot arithmetic (pure), and firing on the runtime with a manual clock."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from harvest_engine import (
    ExecutionFilter,
    ManualClock,
    Overlap,
    Schedule,
    SqliteRuntime,
    Unsupported,
    WorkflowContext,
    WorkflowSchedule,
    next_fire_times,
    workflow,
)
from harvest_engine.schedules import schedule_workflow_id, slot_seconds

if TYPE_CHECKING:
    from tests.stores import OpenReader

Open = Callable[..., SqliteRuntime]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@workflow
async def tick(ctx: WorkflowContext, payload: Any) -> Any:
    return payload


@workflow
async def parked(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("go")


@workflow
async def relay(ctx: WorkflowContext, hops: Any) -> Any:
    if hops:
        ctx.continue_as_new(0)
    return await ctx.wait_for_signal("go")


def fire(rt: SqliteRuntime) -> bool:
    started, error = rt._driver.fire_schedules(rt.clock.now())
    if error is not None:
        raise error
    return started


def runs_of(rt: SqliteRuntime, name: str) -> list[Any]:
    return rt.list_executions(ExecutionFilter().workflow_name(name)).executions


# -- specs and slots (pure) ---------------------------------------------------


aware_times = st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2090, 1, 1),
    timezones=st.just(UTC),
)


@settings(max_examples=80)
@given(after=aware_times, minute=st.integers(0, 59), hour=st.integers(0, 23))
def test_a_cron_slot_is_the_first_matching_minute_after(
    after: datetime, minute: int, hour: int
) -> None:
    spec = Schedule.cron(f"{minute} {hour} * * *")
    slot = spec.next_after(after)
    assert slot > after
    assert (slot.hour, slot.minute, slot.second, slot.microsecond) == (
        hour,
        minute,
        0,
        0,
    )
    assert slot - after <= timedelta(days=1)


@settings(max_examples=80)
@given(
    after=aware_times,
    expression=st.sampled_from(["*/7 * * * *", "0 9-17 * * 1-5", "@hourly"]),
)
def test_cron_slots_agree_with_croniter_matching(
    after: datetime, expression: str
) -> None:
    slots = next_fire_times(Schedule.cron(expression), after, 3)
    assert slots == sorted(slots)
    assert all(croniter.match(expression, s) for s in slots)
    assert slots[0] > after


@settings(max_examples=80)
@given(after=aware_times, seconds=st.integers(1, 7 * 86400))
def test_interval_slots_sit_on_epoch_multiples(after: datetime, seconds: int) -> None:
    slots = next_fire_times(Schedule.every(seconds), after, 3)
    assert slots[0] > after
    assert slots[0] - timedelta(seconds=seconds) <= after
    for a, b in itertools.pairwise(slots):
        assert b - a == timedelta(seconds=seconds)
    assert all(slot_seconds(s) % seconds == 0 for s in slots)


def test_a_cron_reads_its_fields_in_its_time_zone() -> None:
    spec = Schedule.cron("0 3 * * *", timezone="Europe/Berlin")
    slot = spec.next_after(datetime(2030, 1, 1, tzinfo=UTC))
    assert slot == datetime(2030, 1, 1, 2, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "zone", ["Europe", "America/", "Europe/Par", "", "../etc", "/"]
)
def test_a_zone_that_is_not_one_is_a_value_error_naming_it(zone: str) -> None:
    with pytest.raises(ValueError, match="unknown time zone") as caught:
        Schedule.cron("0 3 * * *", timezone=zone)
    assert repr(zone) in str(caught.value)


@pytest.mark.parametrize(
    "build",
    [
        lambda: Schedule.cron("61 * * * *"),
        lambda: Schedule.cron("0 3 * * * 5"),
        lambda: Schedule.cron("every day"),
        lambda: Schedule.cron("0 3 * * *", timezone="Mars/Olympus"),
        lambda: Schedule.every("250ms"),
        lambda: Schedule.every("1.5s"),
        lambda: Schedule.every(0),
        lambda: Schedule.cron("0 0 30 2 *"),
        lambda: Schedule.cron("0 0 31 4,6 *"),
        lambda: Schedule.every("inf"),
        lambda: Schedule.every("999999999d"),
    ],
)
def test_bad_specs_are_refused(build: Callable[[], Schedule]) -> None:
    with pytest.raises(ValueError, match=r"cron|zone|Schedule.every"):
        build()


def test_a_cron_is_refused_exactly_when_no_date_matches_it() -> None:
    # croniter parses "0 0 31 4 *" although no date matches it; Schedule.cron
    # must refuse exactly those, so a stored spec never fails a later fire.
    for month, day in itertools.product(range(1, 13), range(1, 32)):
        longest = {2: 29, 4: 30, 6: 30, 9: 30, 11: 30}.get(month, 31)
        if day > longest:
            with pytest.raises(ValueError, match="never matches"):
                Schedule.cron(f"0 0 {day} {month} *")
        else:
            Schedule.cron(f"0 0 {day} {month} *")


@settings(max_examples=120)
@given(after=aware_times, day=st.integers(1, 29), month=st.integers(1, 12))
def test_an_accepted_cron_has_its_next_slot_after_any_time(
    after: datetime, day: int, month: int
) -> None:
    (slot,) = next_fire_times(Schedule.cron(f"0 0 {day} {month} *"), after, 1)
    assert slot > after
    assert (slot.day, slot.month, slot.hour, slot.minute) == (day, month, 0, 0)
    assert slot - after <= timedelta(days=366 * 8)  # Feb 29 may skip a century year
    assert (slot.day, slot.month, slot.hour, slot.minute) == (day, month, 0, 0)


def test_a_slot_run_has_the_sched_workflow_id() -> None:
    slot = datetime(2030, 1, 1, 0, 15, tzinfo=UTC)
    assert (
        schedule_workflow_id("nightly", slot)
        == f"sched:nightly:{int(slot.timestamp())}"
    )


def test_specs_round_trip_through_their_stored_json() -> None:
    for spec in (Schedule.cron("0 3 * * *", "Asia/Tokyo"), Schedule.every("15m")):
        assert Schedule.from_json(spec.to_json()) == spec


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("catchup", True),
        ("catchup_policy", "all"),
        ("overlap", "buffer_one"),
        ("overlap", "buffer_all"),
        ("overlap", "cancel_other"),
        ("calendar", {"hour": 3}),
        ("end_at", datetime(2031, 1, 1, tzinfo=UTC)),
        ("max_runs", 5),
        ("consecutive_failure_limit", 3),
        ("retry_policy", {"max_attempts": 3}),
        ("execution_timeout", "1h"),
        ("chain_execution_timeout", "1d"),
        ("all_writable_shards", True),
        ("dag_name", "etl"),
        ("queue_name", "gpu"),
    ],
)
def test_every_unsupported_field_is_refused_by_name(field: str, value: Any) -> None:
    with pytest.raises(Unsupported, match=f"^WorkflowSchedule.{field} — "):
        WorkflowSchedule("tick", Schedule.every("1m"), **{field: value})


def test_supported_fields_are_accepted_and_jitter_is_ignored() -> None:
    ws = WorkflowSchedule(
        "tick",
        Schedule.every("1m"),
        input={"full": True},
        max_active_runs=2,
        overlap="allow_all",
        jitter="30s",
        catchup_policy="skip_all",
        queue_name="default",
    )
    assert ws.overlap is Overlap.ALLOW_ALL


@pytest.mark.parametrize("jitter", ["banana", -5, "inf"])
def test_an_ignored_jitter_must_still_be_a_duration(jitter: Any) -> None:
    with pytest.raises(ValueError, match="jitter"):
        WorkflowSchedule("tick", Schedule.every("1m"), jitter=jitter)


# -- firing on the runtime ----------------------------------------------------


@pytest.fixture
def rt(open_rt: Open) -> SqliteRuntime:
    runtime = open_rt()
    for fn in (tick, parked, relay):
        runtime.register_workflow(fn)
    return runtime


def test_a_due_slot_starts_one_run_with_the_slot_id_and_input(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    row = rt.upsert_schedule(
        WorkflowSchedule("tick", Schedule.every("15m"), input={"n": 1})
    )
    assert row.next_fire_at == clock.now() + timedelta(minutes=15)
    assert not fire(rt)
    clock.advance("15m")
    assert fire(rt)
    (run,) = runs_of(rt, "tick")
    slot = row.next_fire_at
    assert slot is not None
    assert run.workflow_id == f"sched:tick:{int((slot - EPOCH).total_seconds())}"
    assert rt.describe(run.exec_id).input.value == {"n": 1}
    assert not fire(rt)  # the slot moved in the same transaction


async def test_a_fired_run_is_driven_by_the_next_poll(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    rt.upsert_schedule(WorkflowSchedule("tick", Schedule.every("1m"), input="hi"))
    clock.advance("1m")
    fire(rt)
    await rt.run_until_idle()
    (run,) = runs_of(rt, "tick")
    assert run.state == "COMPLETED"


def test_after_a_gap_one_run_fires_and_the_next_slot_counts_from_now(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    rt.upsert_schedule(WorkflowSchedule("tick", Schedule.every("15m")))
    clock.advance("2h")
    fire(rt)
    assert len(runs_of(rt, "tick")) == 1
    (row,) = rt.list_schedules()
    assert row.next_fire_at == clock.now() + timedelta(minutes=15)
    assert row.last_fired_at == clock.now() - timedelta(minutes=105)


def test_skip_drops_slots_while_max_active_runs_are_running(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    rt.upsert_schedule(
        WorkflowSchedule("parked", Schedule.every("1m"), max_active_runs=2)
    )
    for _ in range(4):
        clock.advance("1m")
        fire(rt)
    assert len(runs_of(rt, "parked")) == 2
    (row,) = rt.list_schedules()
    assert row.next_fire_at == clock.now() + timedelta(minutes=1)


def test_allow_all_starts_a_run_for_every_slot(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    rt.upsert_schedule(
        WorkflowSchedule("parked", Schedule.every("1m"), overlap="allow_all")
    )
    for _ in range(3):
        clock.advance("1m")
        fire(rt)
    assert len(runs_of(rt, "parked")) == 3


async def test_a_continue_as_new_successor_still_counts(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    rt.upsert_schedule(WorkflowSchedule("relay", Schedule.every("1m"), input=1))
    clock.advance("1m")
    fire(rt)
    await rt.run_until_idle()
    states = sorted(r.state for r in runs_of(rt, "relay"))
    assert states == ["CONTINUED_AS_NEW", "RUNNING"]
    clock.advance("1m")
    fire(rt)
    assert len(runs_of(rt, "relay")) == 2


def test_a_run_with_a_pending_cancel_or_past_its_deadline_does_not_count(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    rt.upsert_schedule(WorkflowSchedule("parked", Schedule.every("1m")))
    clock.advance("1m")
    fire(rt)
    (first,) = runs_of(rt, "parked")
    with rt.store.write() as txn:
        txn.update_execution(str(first.exec_id), cancel_reason="operator stop")
    clock.advance("1m")
    fire(rt)
    assert len(runs_of(rt, "parked")) == 2
    second = next(r for r in runs_of(rt, "parked") if r.exec_id != first.exec_id)
    with rt.store.write() as txn:
        txn.update_execution(str(second.exec_id), deadline=clock.now())
    clock.advance("1m")
    fire(rt)
    assert len(runs_of(rt, "parked")) == 3


def test_pause_stops_fires_and_resume_skips_the_missed_slots(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    rt.upsert_schedule(WorkflowSchedule("tick", Schedule.every("10m")))
    assert rt.pause_schedule("tick")
    clock.advance("1h")
    assert not fire(rt)
    assert rt.resume_schedule("tick")
    (row,) = rt.list_schedules()
    assert not row.paused
    assert row.next_fire_at == clock.now() + timedelta(minutes=10)
    assert not fire(rt)
    assert runs_of(rt, "tick") == []
    assert not rt.pause_schedule("nobody")
    assert not rt.resume_schedule("nobody")


def test_delete_removes_the_schedule_and_its_runs_keep_running(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    rt.upsert_schedule(WorkflowSchedule("parked", Schedule.every("1m")))
    clock.advance("1m")
    fire(rt)
    assert rt.delete_schedule("parked")
    assert not rt.delete_schedule("parked")
    assert rt.list_schedules() == []
    assert [r.state for r in runs_of(rt, "parked")] == ["RUNNING"]


def test_the_same_spec_keeps_its_slot_and_pause_on_every_open(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    first = rt.upsert_schedule(WorkflowSchedule("tick", Schedule.every("1h")))
    rt.pause_schedule("tick")
    clock.advance("20m")
    again = rt.upsert_schedule(
        WorkflowSchedule("tick", Schedule.every("1h"), input="new")
    )
    assert again.next_fire_at == first.next_fire_at
    assert again.paused
    assert again.input.value == "new"
    changed = rt.upsert_schedule(WorkflowSchedule("tick", Schedule.every("15m")))
    assert changed.next_fire_at == clock.now() + timedelta(minutes=10)
    assert changed.paused
    assert changed.created_at == first.created_at


def test_an_unregistered_workflow_only_warns_and_fires_once_registered(
    open_rt: Open, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    with open_rt() as stored_by:  # a process with the code stored the schedule
        stored_by.register_workflow(tick)
        stored_by.upsert_schedule(WorkflowSchedule("tick", Schedule.every("1m")))
    rt = open_rt()  # this one lacks it
    clock.advance("1m")
    with caplog.at_level(logging.WARNING, logger="harvest_engine.schedules"):
        assert not fire(rt)
    assert "not registered" in caplog.text
    rt.register_workflow(tick)
    assert fire(rt)


@pytest.mark.parametrize(
    "spec",
    ["garbage", '{"cron": "0 0 30 2 *", "timezone": "UTC"}', '{"every": 1e12}'],
    ids=["not-json", "cron-never-matches", "interval-past-the-calendar"],
)
@pytest.mark.sqlite_only(
    "damages the row through SQLite's dynamic typing; Postgres's typed columns refuse it"
)
def test_a_damaged_row_only_warns_and_the_others_still_fire(
    rt: SqliteRuntime, clock: ManualClock, caplog: pytest.LogCaptureFixture, spec: str
) -> None:
    rt.upsert_schedule(WorkflowSchedule("tick", Schedule.every("1m")))
    rt.upsert_schedule(WorkflowSchedule("parked", Schedule.every("1m")))
    # "parked" sorts first, so the pass meets the damage before "tick".
    with rt.store.write():
        rt.store.connection.execute(  # type: ignore[attr-defined]
            "UPDATE harvest_schedules SET spec = ? WHERE workflow_name = 'parked'",
            (spec,),
        )
    clock.advance("1m")
    with caplog.at_level(logging.WARNING, logger="harvest_engine.schedules"):
        assert fire(rt)
    assert "damaged spec" in caplog.text
    assert len(runs_of(rt, "tick")) == 1
    assert runs_of(rt, "parked") == []


def test_the_reader_lists_schedules(
    rt: SqliteRuntime, clock: ManualClock, open_reader: OpenReader
) -> None:
    rt.upsert_schedule(WorkflowSchedule("tick", Schedule.cron("0 3 * * *"), input=[1]))
    with open_reader() as reader:
        (row,) = reader.list_schedules()
    assert row.schedule == Schedule.cron("0 3 * * *")
    assert row.next_fire_at == datetime(2030, 1, 1, 3, 0, tzinfo=UTC)
    assert row.input.value == [1]
    assert row.overlap == "skip"


async def test_poll_once_fires_due_schedules_and_drives_the_new_run_in_the_same_pass(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    rt.upsert_schedule(WorkflowSchedule("tick", Schedule.every("1m"), input="hi"))
    assert await rt.poll_once() is False
    clock.advance("1m")
    assert await rt.poll_once() is True
    (run,) = runs_of(rt, "tick")
    assert run.state == "COMPLETED"


async def test_poll_once_as_of_fires_the_slots_due_at_that_time(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    rt.upsert_schedule(WorkflowSchedule("tick", Schedule.every("1m"), input="hi"))
    assert await rt.poll_once_as_of(clock.now() + timedelta(minutes=1)) is True
    assert len(runs_of(rt, "tick")) == 1


async def test_run_until_idle_fires_once_per_call(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    rt.upsert_schedule(
        WorkflowSchedule("tick", Schedule.every("1m"), input="hi", overlap="allow_all")
    )
    clock.advance("1m")
    await rt.run_until_idle()
    assert len(runs_of(rt, "tick")) == 1
    await rt.run_until_idle()
    assert len(runs_of(rt, "tick")) == 1  # no new slot is due yet
    clock.advance("1m")
    await rt.run_until_idle()
    assert len(runs_of(rt, "tick")) == 2
