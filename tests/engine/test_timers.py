"""Cancellable timers: start_timer -> TimerHandle (await_fire, cancel, reset), on real files."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ManualClock,
    RunState,
    SqliteRuntime,
    TimerOutcome,
    WorkflowContext,
    WorkflowReplayer,
    workflow,
)

if TYPE_CHECKING:
    from tests.stores import OpenReader

Open = Callable[..., SqliteRuntime]


@workflow
async def reminder(ctx: WorkflowContext, _: Any) -> Any:
    handle = ctx.start_timer("remind", "10m")
    outcome = await handle.await_fire()
    return outcome.value


@workflow
async def cancelled_reminder(ctx: WorkflowContext, _: Any) -> Any:
    handle = ctx.start_timer("remind", "10m")
    await ctx.wait_for_signal("done")
    handle.cancel()
    first = await handle.await_fire()
    again = ctx.start_timer("remind", "1m")  # a cancelled id can arm again
    second = await again.await_fire()
    return [first.value, second.value]


@workflow
async def snoozed(ctx: WorkflowContext, _: Any) -> Any:
    handle = ctx.start_timer("alarm", "10m")
    await ctx.wait_for_signal("snooze")
    handle.reset("30m")
    return (await handle.await_fire()).value


@workflow
async def late_await(ctx: WorkflowContext, _: Any) -> Any:
    handle = ctx.start_timer("grace", "1h")
    await ctx.wait_for_signal("go")
    return (await handle.await_fire()).value


@workflow
async def never_awaited(ctx: WorkflowContext, _: Any) -> Any:
    ctx.start_timer("unused", "1m")
    return await ctx.wait_for_signal("go")


WORKFLOWS = [reminder, cancelled_reminder, snoozed, late_await, never_awaited]


def runtime(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    return rt


async def test_a_timer_fires_once_its_time_has_come(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("reminder", None)

    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    clock.advance("9m")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    clock.advance("1m")

    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output=TimerOutcome.FIRED.value
    )
    history = rt.load_history(exec_id)
    assert [e.type for e in history] == [
        "WorkflowStarted",
        "TimerStarted",
        "TimerFired",
        "WorkflowCompleted",
    ]
    assert history[1].attrs["timer_id"] == "remind"
    assert WorkflowReplayer(WORKFLOWS).replay(history).closed


async def test_cancel_deletes_the_row_and_await_fire_returns_cancelled(
    open_rt: Open, clock: ManualClock, db_path: Any, open_reader: OpenReader
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("cancelled_reminder", None)
    await rt.run_until_blocked(exec_id)
    rt.send_signal(exec_id, "done", None)

    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    with open_reader() as reader:
        assert [t.timer_id for t in reader.timers(str(exec_id))] == ["remind"]
        assert reader.timers(str(exec_id))[0].fire_at == clock.now() + timedelta(
            minutes=1
        )
    clock.advance("1m")

    state = await rt.run_until_blocked(exec_id)

    assert state == RunState.Completed(output=["cancelled", "fired"])
    types = [e.type for e in rt.load_history(exec_id)]
    assert types.count("TimerCancelled") == 1
    assert types.count("TimerStarted") == 2
    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(exec_id)).closed


async def test_reset_cancels_and_arms_again_from_now(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("snoozed", None)
    await rt.run_until_blocked(exec_id)
    clock.advance("5m")
    rt.send_signal(exec_id, "snooze", None)
    await rt.run_until_blocked(exec_id)

    clock.advance("25m")  # 30 minutes after start: the first deadline has long passed
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    clock.advance("5m")

    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="fired")
    types = [e.type for e in rt.load_history(exec_id)]
    assert types[-4:] == [
        "TimerCancelled",
        "TimerStarted",
        "TimerFired",
        "WorkflowCompleted",
    ]


async def test_an_armed_timer_survives_a_reopen(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("reminder", None)
    await rt.run_until_blocked(exec_id)
    rt.close()
    clock.advance("10m")

    reopened = runtime(open_rt)

    assert await reopened.run_until_blocked(exec_id) == RunState.Completed(
        output="fired"
    )


async def await_two_hours_late(
    rt: SqliteRuntime, clock: ManualClock, db_path: Any
) -> Any:
    """A `late_await` run whose 1h handle is first awaited 2h after it was started."""
    exec_id = rt.start_workflow("late_await", None)
    await rt.run_until_blocked(exec_id)
    assert rt.store.timers(str(exec_id)) == []  # started, not armed
    clock.advance("2h")
    rt.send_signal(exec_id, "go", None)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    return exec_id


async def test_start_timer_deadline_counts_from_the_first_await(
    open_rt: Open, clock: ManualClock, db_path: Any, open_reader: OpenReader
) -> None:
    rt = runtime(open_rt)
    exec_id = await await_two_hours_late(rt, clock, db_path)

    with open_reader() as reader:
        assert [t.fire_at for t in reader.timers(str(exec_id))] == [
            clock.now() + timedelta(hours=1)
        ]
    clock.advance("59m")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    clock.advance("1m")
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="fired")
    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(exec_id)).closed


async def test_a_replay_after_reopen_keeps_the_armed_fire_time(
    open_rt: Open, clock: ManualClock, db_path: Any, open_reader: OpenReader
) -> None:
    rt = runtime(open_rt)
    exec_id = await await_two_hours_late(rt, clock, db_path)
    armed = clock.now() + timedelta(hours=1)
    rt.close()
    clock.advance("30m")

    reopened = runtime(open_rt)  # no cached instance: the whole history replays
    assert await reopened.run_until_blocked(exec_id) == RunState.WaitingTimer()

    with open_reader() as reader:
        assert [t.fire_at for t in reader.timers(str(exec_id))] == [armed]
    clock.advance("30m")
    assert await reopened.run_until_blocked(exec_id) == RunState.Completed(
        output="fired"
    )


async def test_a_timer_never_awaited_is_never_armed(
    open_rt: Open, clock: ManualClock, db_path: Any, open_reader: OpenReader
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("never_awaited", None)
    await rt.run_until_blocked(exec_id)
    clock.advance("5m")

    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="go")
    with open_reader() as reader:
        assert reader.timers(str(exec_id)) == []
    assert "TimerFired" not in [e.type for e in rt.load_history(exec_id)]


@workflow
async def awaits_after_an_effect(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.side_effect(lambda: 0)
    at = ctx.now()
    handle = ctx.start_timer("after", "1h")
    await handle.await_fire()
    return at.isoformat()


@pytest.mark.parametrize("reopen", [False, True])
async def test_a_handle_awaited_after_a_side_effect_counts_from_that_drive(
    open_rt: Open,
    clock: ManualClock,
    db_path: Any,
    *,
    reopen: bool,
    open_reader: OpenReader,
) -> None:
    # Live, the code resumed after the side effect with the clock of the
    # event before it (the start), while replay resumes it at the side
    # effect's own event: ctx.now() and the armed deadline must agree.
    rt = open_rt()
    rt.register_workflow(awaits_after_an_effect)
    exec_id = rt.start_workflow("awaits_after_an_effect", None)
    clock.advance("10m")
    driven = clock.now()
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    with open_reader() as reader:
        assert [t.fire_at for t in reader.timers(str(exec_id))] == [
            driven + timedelta(hours=1)
        ]
    if reopen:
        rt.close()
        rt = open_rt()
        rt.register_workflow(awaits_after_an_effect)
    clock.advance("1h")

    state = await rt.run_until_blocked(exec_id)

    assert state == RunState.Completed(output=driven.isoformat())
    history = rt.load_history(exec_id)
    assert (
        history[2]
        .attrs["fire_at"]
        .startswith((driven + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S"))
    )
    assert WorkflowReplayer([awaits_after_an_effect]).replay(history).closed


@workflow
async def snoozed_by_handler(ctx: WorkflowContext, _: Any) -> Any:
    handle = ctx.start_timer("alarm", "10m")
    ctx.register_signal_handler("snooze", lambda _: handle.reset("30m"))
    first = await handle.await_fire()  # a reset cancels this wait
    second = await handle.await_fire()
    return [first.value, second.value, ctx.now().isoformat()]


@pytest.mark.parametrize("reopen", [False, True])
async def test_a_reset_in_a_handler_is_not_fired_by_the_deadline_it_replaced(
    open_rt: Open,
    clock: ManualClock,
    db_path: Any,
    *,
    reopen: bool,
    open_reader: OpenReader,
) -> None:
    # The snooze arrived before the first deadline, but the drive comes after
    # it: the old row was read as due, and its TimerFired must not reach the
    # timer the handler started again under the same id.
    rt = open_rt()
    rt.register_workflow(snoozed_by_handler)
    exec_id = rt.start_workflow("snoozed_by_handler", None)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    clock.advance("5m")
    rt.send_signal(exec_id, "snooze", None)
    clock.advance("10m")

    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    with open_reader() as reader:
        assert [t.fire_at for t in reader.timers(str(exec_id))] == [
            clock.now() + timedelta(minutes=30)
        ]
    if reopen:
        rt.close()
        rt = open_rt()
        rt.register_workflow(snoozed_by_handler)
    clock.advance("30m")
    state = await rt.run_until_blocked(exec_id)

    assert state == RunState.Completed(
        output=["cancelled", "fired", clock.now().isoformat()]
    )
    types = [e.type for e in rt.load_history(exec_id)]
    assert types.count("TimerFired") == 1
    assert (
        WorkflowReplayer([snoozed_by_handler]).replay(rt.load_history(exec_id)).closed
    )


system_clock_reads: list[Any] = []


@workflow
async def naps_an_hour(ctx: WorkflowContext, _: Any) -> str:
    system_clock_reads.append((ctx.now(), ctx.system_now()))
    await ctx.sleep("1h")
    return "woke"


async def test_a_timer_armed_in_the_first_drive_counts_from_that_drives_clock(
    open_rt: Open, clock: ManualClock, open_reader: OpenReader
) -> None:
    rt = open_rt()
    rt.register_workflow(naps_an_hour)
    started = clock.now()
    exec_id = rt.start_workflow("naps_an_hour")
    system_clock_reads.clear()
    later = started + timedelta(hours=5)

    # Guide §7: the drive keeps one clock, the time it names.
    assert await rt.run_until_blocked_as_of(exec_id, later) == RunState.WaitingTimer()
    assert system_clock_reads == [(started, later)]
    with open_reader() as reader:
        (timer,) = reader.timers(exec_id)
    assert timer.fire_at == later + timedelta(hours=1)
    almost = later + timedelta(minutes=59)
    assert await rt.run_until_blocked_as_of(exec_id, almost) == RunState.WaitingTimer()
    done = await rt.run_until_blocked_as_of(exec_id, later + timedelta(hours=1))
    assert done == RunState.Completed(output="woke")
