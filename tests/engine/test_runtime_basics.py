"""Opening, registering, starting, driving and reading a run on a real file."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivitySpec,
    ApplicationError,
    ErrorInfo,
    ExecutionId,
    ExecutionNotFound,
    ExecutionOutcome,
    ManualClock,
    PostgresRuntime,
    RunState,
    SqliteRuntime,
    UnknownWorkflow,
    UnsupportedFeature,
    WorkflowContext,
    WorkflowNotRunning,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from pathlib import Path

Open = Callable[..., SqliteRuntime]


@activity
async def greet(ctx: Any, name: str) -> str:
    return f"hello {name}"


@workflow
async def hello(ctx: WorkflowContext, name: str) -> str:
    return await ctx.execute_activity(greet, name)


@workflow
async def waits_for_approval(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("approve")


@workflow
async def fails(ctx: WorkflowContext, _: Any) -> None:
    raise ApplicationError("card declined", type="Declined", details={"code": 51})


def registered(rt: SqliteRuntime) -> SqliteRuntime:
    rt.register_workflow(hello)
    rt.register_workflow(waits_for_approval)
    rt.register_workflow(fails)
    rt.register_activity(greet)
    return rt


def test_decorated_functions_stay_callable_and_carry_info() -> None:
    assert hello.info.name == "hello"  # type: ignore[attr-defined]
    assert greet.info.max_attempts == 1  # type: ignore[attr-defined]
    assert callable(hello)


def test_open_creates_a_versioned_wal_file(db_path: Path) -> None:
    with SqliteRuntime.open(db_path):
        pass
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] >= 1
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


async def test_a_workflow_with_an_activity_completes(open_rt: Open) -> None:
    rt = registered(open_rt())
    exec_id = rt.start_workflow("hello", "ada")
    assert isinstance(exec_id, ExecutionId)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="hello ada")
    assert rt.outcome(exec_id) == ExecutionOutcome.Completed(output="hello ada")
    types = [e.type for e in rt.load_history(exec_id)]
    assert types == [
        "WorkflowStarted",
        "ActivityScheduled",
        "ActivityCompleted",
        "WorkflowCompleted",
    ]


async def test_start_appends_workflow_started_and_runs_nothing(open_rt: Open) -> None:
    rt = registered(open_rt())
    exec_id = rt.start_workflow("hello", "ada")
    assert [e.type for e in rt.load_history(exec_id)] == ["WorkflowStarted"]
    assert rt.outcome(exec_id) == ExecutionOutcome.Running()


async def test_history_seqs_are_one_based_and_contiguous(open_rt: Open) -> None:
    rt = registered(open_rt())
    exec_id = rt.start_workflow("hello", "ada")
    await rt.run_until_blocked(exec_id)
    history = rt.load_history(exec_id)
    assert [e.seq for e in history] == list(range(1, len(history) + 1))
    assert all(e.at.tzinfo is not None for e in history)


async def test_a_run_blocked_on_a_signal_reports_its_name_and_resumes_after_send(
    open_rt: Open,
) -> None:
    rt = registered(open_rt())
    exec_id = rt.start_workflow("waits_for_approval")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="approve")
    rt.send_signal(exec_id, "approve", {"by": "kim"})
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output={"by": "kim"}
    )


async def test_an_application_error_fails_the_run_with_its_type_and_details(
    open_rt: Open,
) -> None:
    rt = registered(open_rt())
    exec_id = rt.start_workflow("fails")
    state = await rt.run_until_blocked(exec_id)
    assert isinstance(state, RunState.Failed)
    assert dataclasses.replace(state.error, stack_trace=None) == ErrorInfo(
        type="Declined", message="card declined", details={"code": 51}
    )
    assert "test_runtime_basics.py" in (state.error.stack_trace or "")
    outcome = rt.outcome(exec_id)
    assert isinstance(outcome, ExecutionOutcome.Failed)
    assert str(outcome.error) == "card declined"


async def test_driving_a_closed_run_returns_its_end_again(open_rt: Open) -> None:
    rt = registered(open_rt())
    exec_id = rt.start_workflow("hello", "bo")
    first = await rt.run_until_blocked(exec_id)
    assert await rt.run_until_blocked(exec_id) == first
    assert len(rt.load_history(exec_id)) == 4


async def test_a_durable_timer_blocks_until_the_clock_passes_it(
    open_rt: Open, clock: ManualClock
) -> None:
    @workflow
    async def naps(ctx: WorkflowContext, _: Any) -> str:
        await ctx.sleep("5m")
        return "rested"

    rt = open_rt()
    rt.register_workflow(naps)
    exec_id = rt.start_workflow("naps")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    clock.advance(timedelta(minutes=4))
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    clock.advance(timedelta(minutes=1))
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="rested")


async def test_run_until_blocked_as_of_uses_the_given_time_for_timers(
    open_rt: Open, clock: ManualClock
) -> None:
    @workflow
    async def naps(ctx: WorkflowContext, _: Any) -> str:
        await ctx.timer(30)
        return ctx.now().isoformat()

    rt = open_rt()
    rt.register_workflow(naps)
    exec_id = rt.start_workflow("naps")
    await rt.run_until_blocked(exec_id)
    later = clock.now() + timedelta(seconds=31)
    state = await rt.run_until_blocked_as_of(exec_id, later)
    assert state == RunState.Completed(output=later.isoformat())


async def test_run_until_idle_settles_every_run_and_poll_once_reports_progress(
    open_rt: Open,
) -> None:
    rt = registered(open_rt())
    runs = [rt.start_workflow("hello", n) for n in ("a", "b", "c")]
    blocked = rt.start_workflow("waits_for_approval")
    await rt.run_until_idle()
    assert [rt.outcome(r) for r in runs] == [
        ExecutionOutcome.Completed(output=f"hello {n}") for n in ("a", "b", "c")
    ]
    assert rt.outcome(blocked) == ExecutionOutcome.Running()
    assert await rt.poll_once() is False
    rt.send_signal(blocked, "approve", 1)
    assert await rt.poll_once() is True
    assert rt.outcome(blocked) == ExecutionOutcome.Completed(output=1)


async def test_poll_once_as_of_fires_timers_due_at_that_time(
    open_rt: Open, clock: ManualClock
) -> None:
    @workflow
    async def naps(ctx: WorkflowContext, _: Any) -> str:
        await ctx.timer(10)
        return "up"

    rt = open_rt()
    rt.register_workflow(naps)
    exec_id = rt.start_workflow("naps")
    await rt.poll_once()
    assert await rt.poll_once_as_of(clock.now() + timedelta(seconds=11)) is True
    assert rt.outcome(exec_id) == ExecutionOutcome.Completed(output="up")


def test_as_of_drivers_refuse_a_naive_datetime(open_rt: Open) -> None:
    import asyncio
    from datetime import datetime

    rt = registered(open_rt())
    exec_id = rt.start_workflow("hello", "x")
    with pytest.raises(ValueError, match="aware"):
        asyncio.run(rt.run_until_blocked_as_of(exec_id, datetime(2030, 1, 1)))  # noqa: DTZ001


@pytest.mark.parametrize(
    "call",
    [
        lambda rt, e: rt.outcome(e),
        lambda rt, e: rt.load_history(e),
        lambda rt, e: rt.activity_attempts(e, "greet"),
        lambda rt, e: rt.send_signal(e, "approve", 1),
        lambda rt, e: rt.describe(e),
        lambda rt, e: rt.successor(e),
        lambda rt, e: rt.parent_execution(e),
        lambda rt, e: rt.llm_ledger(e),
    ],
)
def test_every_exec_id_call_raises_execution_not_found_for_an_unknown_id(
    open_rt: Open, call: Callable[[SqliteRuntime, Any], Any]
) -> None:
    rt = registered(open_rt())
    with pytest.raises(ExecutionNotFound):
        call(rt, ExecutionId.new())
    with pytest.raises(ExecutionNotFound):
        call(rt, "no-such-run")


async def test_drivers_raise_execution_not_found_for_an_unknown_id(
    open_rt: Open,
) -> None:
    rt = registered(open_rt())
    with pytest.raises(ExecutionNotFound):
        await rt.run_until_blocked(ExecutionId.new())


async def test_send_signal_to_a_closed_run_is_workflow_not_running(
    open_rt: Open,
) -> None:
    rt = registered(open_rt())
    exec_id = rt.start_workflow("hello", "x")
    await rt.run_until_blocked(exec_id)
    with pytest.raises(WorkflowNotRunning) as caught:
        rt.send_signal(exec_id, "approve", 1)
    assert caught.value.state == "COMPLETED"  # type: ignore[attr-defined]


def test_starting_an_unregistered_workflow_is_refused(open_rt: Open) -> None:
    rt = open_rt()
    with pytest.raises(UnknownWorkflow, match="nope"):
        rt.start_workflow("nope", {})


async def test_start_with_id_attaches_to_the_running_run_and_discards_the_input(
    open_rt: Open,
) -> None:
    rt = registered(open_rt())
    first = rt.start_workflow_with_id("waits_for_approval", "order-7", {"n": 1})
    again = rt.start_workflow_with_id("waits_for_approval", "order-7", {"n": 2})
    assert again == first
    assert rt.load_history(first)[0].attrs["input"] == {"n": 1}
    rt.send_signal(first, "approve", True)
    await rt.run_until_blocked(first)
    fresh = rt.start_workflow_with_id("waits_for_approval", "order-7", {"n": 3})
    assert fresh != first


@pytest.mark.parametrize("blank", ["", "   "])
def test_start_with_a_blank_id_always_makes_a_fresh_run(
    open_rt: Open, blank: str
) -> None:
    rt = registered(open_rt())
    a = rt.start_workflow_with_id("waits_for_approval", blank, 1)
    b = rt.start_workflow_with_id("waits_for_approval", blank, 2)
    assert a != b


def test_register_refuses_an_option_this_backend_cannot_honour_by_name(
    open_rt: Open,
) -> None:
    rt = open_rt()

    @workflow(sharding=2)  # no backend's option: refused by name
    async def crowded(ctx: WorkflowContext, _: Any) -> None:
        return None

    @activity(heartbeat_timeout="10s")
    async def beating(ctx: Any, _: Any) -> None:
        return None

    @activity(rate_limit_per_second=3)
    async def limited(ctx: Any, _: Any) -> None:
        return None

    with pytest.raises(UnsupportedFeature, match="sharding"):
        rt.register_workflow(crowded)
    if isinstance(rt, PostgresRuntime):
        rt.register_activity(beating)  # leases time out a silent attempt there
    else:
        with pytest.raises(UnsupportedFeature, match="heartbeat_timeout"):
            rt.register_activity(beating)
    with pytest.raises(UnsupportedFeature, match="rate_limit_per_second"):
        rt.register_activity_with_body(limited, lambda x: x)


async def test_register_activity_with_body_runs_the_stub_instead(open_rt: Open) -> None:
    rt = open_rt()
    rt.register_workflow(hello)
    rt.register_activity_with_body(greet, lambda name: f"stub {name}")
    exec_id = rt.start_workflow("hello", "zed")
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="stub zed")


async def test_register_activity_raw_runs_a_named_body_with_its_attempts(
    open_rt: Open, clock: ManualClock
) -> None:
    tries: list[int] = []

    def flaky(value: Any) -> str:
        tries.append(1)
        if len(tries) < 2:
            raise RuntimeError("not yet")
        return f"raw {value}"

    @workflow
    async def uses_raw(ctx: WorkflowContext, value: Any) -> Any:
        return await ctx.execute_activity_raw("raw_step", value, "default")

    rt = open_rt()
    rt.register_workflow(uses_raw)
    rt.register_activity_raw("raw_step", ActivitySpec(max_attempts=2, body=flaky))
    exec_id = rt.start_workflow("uses_raw", 5)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    clock.advance(60)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="raw 5")
    assert len(tries) == 2


def test_close_twice_is_harmless_and_the_context_manager_closes(db_path: Path) -> None:
    rt = SqliteRuntime.open(db_path)
    rt.close()
    rt.close()
    with SqliteRuntime.open(db_path) as again:
        assert again.store is not None
    SqliteRuntime.open(db_path).close()


def test_open_in_memory_gives_a_fresh_private_database_each_time() -> None:
    with SqliteRuntime.open_in_memory() as a, SqliteRuntime.open_in_memory() as b:
        a.register_workflow(hello)
        exec_id = a.start_workflow("hello", "x")
        with pytest.raises(ExecutionNotFound):
            b.outcome(exec_id)


def test_two_runtimes_on_one_shared_in_memory_database_conflict() -> None:
    from harvest_engine import DatabaseLocked

    uri = "file:shared-runtime-test?mode=memory&cache=shared"
    with SqliteRuntime.open_in_memory(uri=uri), pytest.raises(DatabaseLocked):
        SqliteRuntime.open_in_memory(uri=uri)
    with SqliteRuntime.open_in_memory(uri=uri):
        pass  # the owner row went with the first runtime
