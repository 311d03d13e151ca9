"""serve() and next_wakeup(): the writer runs itself, sleeps until due, wakes on calls, stops cleanly."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityContext,
    ExecutionOutcome,
    ManualClock,
    RetryPolicy,
    Schedule,
    SqliteRuntime,
    WorkflowContext,
    WorkflowSchedule,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from pathlib import Path

Open = Callable[..., SqliteRuntime]


@workflow
async def greet(ctx: WorkflowContext, name: str) -> str:
    return f"hello {name}"


@workflow
async def nap(ctx: WorkflowContext, seconds: float) -> str:
    await ctx.sleep(seconds)
    return "rested"


@workflow
async def wait_go(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("go")


@workflow
async def ten_minutes(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.sleep("10m")


async def until(
    check: Callable[[], bool], *, within: float = 5.0, what: str = ""
) -> None:
    """Wait for `check()` to hold, polling the loop; fail after `within` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        if loop.time() > deadline:
            pytest.fail(f"timed out waiting for {what or check}")
        await asyncio.sleep(0.005)


async def serving(
    rt: SqliteRuntime, body: Callable[[], Awaitable[None]], **options: Any
) -> None:
    """Run `body` beside `rt.serve()`, then stop the server and wait for it."""
    stop = asyncio.Event()
    server = asyncio.create_task(rt.serve(stop, **options))
    try:
        await body()
    finally:
        stop.set()
        await asyncio.wait_for(server, timeout=10)


def completed(rt: SqliteRuntime, exec_id: Any) -> bool:
    return isinstance(rt.outcome(exec_id), ExecutionOutcome.Completed)


async def test_serve_runs_a_run_started_in_process_to_its_end(db_path: Path) -> None:
    with SqliteRuntime.open(db_path) as rt:
        rt.register_workflow(greet)

        async def body() -> None:
            exec_id = rt.start_workflow("greet", "ada")
            await until(lambda: completed(rt, exec_id))
            assert rt.outcome(exec_id) == ExecutionOutcome.Completed(output="hello ada")

        await serving(rt, body)


async def test_serve_wakes_on_a_signal_and_fires_a_timer_when_it_comes_due(
    db_path: Path,
) -> None:
    with SqliteRuntime.open(db_path) as rt:
        rt.register_workflow(wait_go)
        rt.register_workflow(nap)

        async def body() -> None:
            waiting = rt.start_workflow("wait_go")
            sleeper = rt.start_workflow("nap", 0.05)
            rt.send_signal(waiting, "go", {"n": 1})
            await until(lambda: completed(rt, waiting), what="the signalled run")
            await until(lambda: completed(rt, sleeper), what="the timer")

        await serve_with_timeout(rt, body)


async def serve_with_timeout(
    rt: SqliteRuntime, body: Callable[[], Awaitable[None]]
) -> None:
    # A poll far longer than the test: only the wake event and the due time
    # can make the loop act, so the test proves both.
    await serving(rt, body, poll_interval="60s")


async def test_a_timer_that_comes_due_while_a_round_runs_fires_at_once_not_a_poll_later(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = open_rt()
    rt.register_workflow(ten_minutes)
    exec_id = rt.start_workflow("ten_minutes")
    await rt.run_until_blocked(exec_id)  # parked on its timer, due in 10 minutes
    real_pass = rt._driver.one_pass
    passes = 0

    async def timer_comes_due_during_the_first_pass(now: Any) -> Any:
        nonlocal passes
        passes += 1
        result = await real_pass(now)
        if passes == 1:  # after the round read the clock, before the loop sleeps
            clock.advance("601s")  # the timer is due, and a second has gone
        return result

    rt._driver.one_pass = timer_comes_due_during_the_first_pass  # type: ignore[method-assign]

    async def body() -> None:
        await until(
            lambda: completed(rt, exec_id), what="the timer, well before a poll"
        )

    # A poll far longer than the test: only knowing the time came due after
    # the round began can make the loop fire the timer within it.
    await serving(rt, body, poll_interval="60s")


async def test_work_ready_now_that_a_round_cannot_take_waits_a_poll_not_a_spin(
    open_rt: Open, clock: ManualClock
) -> None:
    # "Ready now" (a flagged run another worker holds, a command the applier
    # has yet to take) reads as due at the moment asked, always after the last
    # round began; it must not look like a timer that came due mid-round.
    rt = open_rt()
    passes = 0

    async def no_progress(now: Any) -> Any:
        nonlocal passes
        passes += 1
        clock.advance("1ms")  # time moves while a round runs
        return False, []

    rt._driver.one_pass = no_progress  # type: ignore[method-assign]
    rt._driver.next_wakeup = lambda: rt.clock.now()  # type: ignore[method-assign]

    async def body() -> None:
        await asyncio.sleep(0.3)

    await serving(rt, body, poll_interval="50ms")
    assert 2 <= passes <= 12  # about one a poll tick, not thousands


def test_next_wakeup_is_none_when_nothing_waits(open_rt: Open) -> None:
    rt = open_rt()
    assert rt.next_wakeup() is None


async def test_next_wakeup_is_the_earliest_timer_and_is_aware(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = open_rt()
    rt.register_workflow(ten_minutes)
    exec_id = rt.start_workflow("ten_minutes")
    assert rt.next_wakeup() == clock.now()  # ready now: its first drive
    await rt.run_until_blocked(exec_id)
    wake = rt.next_wakeup()
    assert wake == clock.now() + timedelta(minutes=10)
    assert wake is not None
    assert wake.tzinfo is not None


async def test_next_wakeup_includes_an_activity_retry_backoff(
    open_rt: Open, clock: ManualClock
) -> None:
    @activity(retry=RetryPolicy(max_attempts=3, initial_interval="30s"))
    def flaky(_: Any) -> Any:
        raise RuntimeError("down")

    @workflow
    async def calls_flaky(ctx: WorkflowContext, _: Any) -> Any:
        return await ctx.execute_activity(flaky)

    rt = open_rt()
    rt.register_workflow(calls_flaky)
    rt.register_activity(flaky)
    exec_id = rt.start_workflow("calls_flaky")
    await rt.run_until_blocked(exec_id)
    assert rt.next_wakeup() == clock.now() + timedelta(seconds=30)


def test_next_wakeup_includes_the_next_schedule_slot(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = open_rt()
    rt.register_workflow(greet)
    row = rt.upsert_schedule(
        WorkflowSchedule("greet", Schedule.every("15m"), input="cron")
    )
    assert rt.next_wakeup() == row.next_fire_at
    rt.pause_schedule("greet")
    assert rt.next_wakeup() is None


async def test_next_wakeup_includes_an_execution_deadline(
    open_rt: Open, clock: ManualClock
) -> None:
    @workflow(execution_timeout="1h")
    async def bounded(ctx: WorkflowContext, _: Any) -> Any:
        return await ctx.wait_for_signal("never")

    rt = open_rt()
    rt.register_workflow(bounded)
    exec_id = rt.start_workflow("bounded")
    await rt.run_until_blocked(exec_id)
    assert rt.next_wakeup() == clock.now() + timedelta(hours=1)


async def test_a_failing_run_is_logged_once_and_backs_off_while_others_run(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with SqliteRuntime.open(db_path) as rt:
        rt.register_workflow(greet)
        rt.start_workflow("greet", "first")
    # Reopened without the workflow's code: its run fails every pass.
    with SqliteRuntime.open(db_path) as rt:
        passes = 0
        real_pass = rt._driver.one_pass

        async def counted(now: Any) -> Any:
            nonlocal passes
            passes += 1
            return await real_pass(now)

        rt._driver.one_pass = counted  # type: ignore[method-assign]

        @workflow
        async def other(ctx: WorkflowContext, _: Any) -> str:
            return "fine"

        rt.register_workflow(other)

        async def body() -> None:
            fine = rt.start_workflow("other")
            await until(lambda: completed(rt, fine), what="the healthy run")
            await until(lambda: passes >= 4, what="a few backed-off retries")
            started = passes
            await asyncio.sleep(0.2)
            # Exponential backoff from 50 ms: a handful of passes, not a spin.
            assert passes - started <= 4

        with caplog.at_level(logging.DEBUG, logger="harvest_engine"):
            await serving(rt, body)
    failures = [
        r for r in caplog.records if r.levelno >= logging.ERROR and "greet" in r.message
    ]
    assert len(failures) == 1
    assert failures[0].name.startswith("harvest_engine")


async def test_on_stop_a_running_body_finishes_within_the_grace(
    db_path: Path,
) -> None:
    started = asyncio.Event()

    @activity
    async def slow(ctx: ActivityContext, _: Any) -> str:
        started.set()
        await asyncio.sleep(0.1)
        return "done"

    @workflow
    async def calls_slow(ctx: WorkflowContext, _: Any) -> Any:
        return await ctx.execute_activity(slow)

    with SqliteRuntime.open(db_path) as rt:
        rt.register_workflow(calls_slow)
        rt.register_activity(slow)
        exec_id = rt.start_workflow("calls_slow")
        stop = asyncio.Event()
        server = asyncio.create_task(rt.serve(stop, grace="5s"))
        await asyncio.wait_for(started.wait(), 5)
        stop.set()
        await asyncio.wait_for(server, 5)
        attempts = rt.activity_attempts(exec_id, "slow")
        assert [a.outcome for a in attempts] == ["COMPLETED"]


async def test_a_body_past_the_grace_is_cut_off_and_runs_again_on_the_next_serve(
    db_path: Path,
) -> None:
    calls = 0
    release = asyncio.Event()
    started = asyncio.Event()

    @activity
    async def stubborn(ctx: ActivityContext, _: Any) -> str:
        nonlocal calls
        calls += 1
        started.set()
        await release.wait()
        return "finally"

    @workflow
    async def calls_stubborn(ctx: WorkflowContext, _: Any) -> Any:
        return await ctx.execute_activity(stubborn)

    with SqliteRuntime.open(db_path) as rt:
        rt.register_workflow(calls_stubborn)
        rt.register_activity(stubborn)
        exec_id = rt.start_workflow("calls_stubborn")
        stop = asyncio.Event()
        server = asyncio.create_task(rt.serve(stop, grace="50ms"))
        await asyncio.wait_for(started.wait(), 5)
        stop.set()
        await asyncio.wait_for(server, 5)
        assert isinstance(rt.outcome(exec_id), ExecutionOutcome.Running)
        assert [t.status for t in rt.store.pending_tasks(str(exec_id))] == ["PENDING"]
        release.set()

        async def body() -> None:
            await until(lambda: completed(rt, exec_id))

        await serving(rt, body)
        assert calls == 2
        assert rt.outcome(exec_id) == ExecutionOutcome.Completed(output="finally")


async def test_a_cancelled_serve_leaves_the_runtime_usable(db_path: Path) -> None:
    with SqliteRuntime.open(db_path) as rt:
        rt.register_workflow(greet)
        server = asyncio.create_task(rt.serve())
        await asyncio.sleep(0)
        server.cancel()
        with pytest.raises(asyncio.CancelledError):
            await server
        exec_id = rt.start_workflow("greet", "again")
        await rt.run_until_blocked(exec_id)
        assert completed(rt, exec_id)

        async def body() -> None:
            second = rt.start_workflow("greet", "served")
            await until(lambda: completed(rt, second))

        await serving(rt, body)


async def test_a_runtime_serves_once_at_a_time(db_path: Path) -> None:
    with SqliteRuntime.open(db_path) as rt:

        async def body() -> None:
            await asyncio.sleep(0)
            with pytest.raises(RuntimeError, match="already serving"):
                await rt.serve()

        await serving(rt, body)


async def test_serve_refuses_a_bad_poll_interval(db_path: Path) -> None:
    with SqliteRuntime.open(db_path) as rt:
        with pytest.raises(ValueError, match="poll_interval"):
            await rt.serve(poll_interval="soon")
        with pytest.raises(ValueError, match="poll_interval"):
            await rt.serve(poll_interval=0)


async def test_serve_fires_a_due_schedule(db_path: Path) -> None:
    with SqliteRuntime.open(db_path) as rt:
        rt.register_workflow(greet)
        rt.upsert_schedule(
            WorkflowSchedule("greet", Schedule.every("1s"), input="cron")
        )

        def a_run_completed() -> bool:
            runs = rt.list_executions().executions
            return any(r.state == "COMPLETED" for r in runs)

        async def body() -> None:
            await until(a_run_completed, within=5, what="a scheduled run")

        await serving(rt, body)


async def test_one_long_body_does_not_hold_other_runs_back(db_path: Path) -> None:
    release = asyncio.Event()
    started = asyncio.Event()

    @activity
    async def long_call(ctx: ActivityContext, _: Any) -> str:
        started.set()
        await release.wait()
        return "late"

    @activity
    async def quick(ctx: ActivityContext, n: int) -> int:
        return n + 1

    @workflow
    async def slow_run(ctx: WorkflowContext, _: Any) -> Any:
        return await ctx.execute_activity(long_call)

    @workflow
    async def chain(ctx: WorkflowContext, _: Any) -> Any:
        n = 0
        for _ in range(3):
            n = await ctx.execute_activity(quick, n)
        await ctx.sleep(0.05)
        return n

    with SqliteRuntime.open(db_path) as rt:
        for fn in (slow_run, chain):
            rt.register_workflow(fn)
        for fn in (long_call, quick):
            rt.register_activity(fn)

        async def body() -> None:
            slow = rt.start_workflow("slow_run")
            await asyncio.wait_for(started.wait(), 5)
            fast = rt.start_workflow("chain")
            await until(
                lambda: completed(rt, fast), what="the chain beside a long body"
            )
            assert rt.outcome(fast) == ExecutionOutcome.Completed(output=3)
            assert not completed(rt, slow)
            release.set()
            await until(lambda: completed(rt, slow), what="the long body's run")

        await serving(rt, body)
