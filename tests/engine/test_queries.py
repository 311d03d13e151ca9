"""Queries: the state at the frontier, replayed in memory, writing nothing, with every error."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from talking import file_rows, request_cancel

from harvest_engine import (
    ActivityContext,
    ExecutionId,
    ExecutionNotFound,
    ManualClock,
    NonDeterminismDetected,
    QueryFailed,
    QueryNotFound,
    QueryTimedOut,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowReplayer,
    activity,
    query,
    workflow,
)

Open = Callable[..., SqliteRuntime]


@activity
def step(ctx: ActivityContext, value: str) -> str:
    return f"did {value}"


@workflow
async def order(ctx: WorkflowContext, _: Any) -> list[Any]:
    state: dict[str, Any] = {"stage": "started", "items": []}
    ctx.register_query("stage", lambda: state["stage"])
    ctx.register_query("item", lambda index: state["items"][index])
    ctx.register_query("cancel", ctx.cancellation_reason)
    ctx.register_query("boom", lambda: 1 / 0)
    ctx.register_query("not_json", lambda: {1, 2})

    async def forever() -> Any:
        return await ctx.wait_for_signal("never")

    ctx.register_query("forever", forever)
    state["stage"] = "reserving"
    state["items"].append(await ctx.execute_activity(step, "reserve"))
    ctx.register_query("late", lambda: "registered after the first activity")
    state["stage"] = "waiting"
    state["items"].append(await ctx.wait_for_signal("approve"))
    state["stage"] = "sleeping"
    await ctx.sleep("1h")
    state["stage"] = "done"
    return list(state["items"])


@workflow(name="order")
async def order_changed(ctx: WorkflowContext, _: Any) -> list[Any]:
    await ctx.sleep("1m")  # today's code sleeps where the history ran an activity
    return []


@query(workflow="order")
def phase(ctx: WorkflowContext, arg: Any) -> str:
    return f"{ctx.info().workflow_id}:{arg}"


@query(workflow="order", name="stage")
def declared_stage(ctx: WorkflowContext, arg: Any) -> str:
    return "the declarative handler"


@query(workflow="audit")
def audit_only(ctx: WorkflowContext, arg: Any) -> str:
    return "audit"


def register(rt: SqliteRuntime) -> SqliteRuntime:
    rt.register_workflow(order)
    rt.register_activity(step)
    for handler in (phase, declared_stage, audit_only):
        rt.register_query(handler)
    return rt


@pytest.fixture
def rt(open_rt: Open) -> SqliteRuntime:
    return register(open_rt())


async def waiting_run(rt: SqliteRuntime) -> ExecutionId:
    exec_id = rt.start_workflow_with_id("order", "order-7", None)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="approve")
    return exec_id


async def test_a_query_answers_the_state_at_the_frontier_and_writes_nothing(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    exec_id = await waiting_run(rt)
    rt.send_signal(exec_id, "approve", "staged, not yet delivered")
    clock.advance("2h")
    before = file_rows(rt)

    assert await rt.query(exec_id, "stage") == "waiting"
    assert await rt.query(exec_id, "item", 0) == "did reserve"
    assert await rt.query(exec_id, "late") == "registered after the first activity"

    assert file_rows(rt) == before  # no event, no row, the signal still staged
    assert len(rt.store.staged_signals(str(exec_id))) == 1


async def test_a_query_of_a_run_never_driven_runs_no_activity_and_writes_nothing(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("order", None)
    before = file_rows(rt)

    assert await rt.query(exec_id, "stage") == "reserving"
    # The replay does not know a query registered past the frontier.
    with pytest.raises(QueryNotFound, match="late"):
        await rt.query(exec_id, "late")
    assert file_rows(rt) == before
    assert rt.store.pending_tasks(str(exec_id)) == []


async def test_a_due_timer_does_not_fire_for_a_query(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    exec_id = await waiting_run(rt)
    rt.send_signal(exec_id, "approve", "yes")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    clock.advance("2h")
    before = file_rows(rt)

    assert await rt.query(exec_id, "stage") == "sleeping"
    assert file_rows(rt) == before
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output=["did reserve", "yes"]
    )


async def test_a_terminal_run_answers_with_the_state_at_its_end(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    exec_id = await waiting_run(rt)
    rt.send_signal(exec_id, "approve", "yes")
    await rt.run_until_blocked(exec_id)
    clock.advance("2h")
    await rt.run_until_blocked(exec_id)

    assert await rt.query(exec_id, "stage") == "done"
    assert await rt.query(exec_id, "item", 1) == "yes"


async def test_a_pending_cancel_is_visible_to_a_query(rt: SqliteRuntime) -> None:
    exec_id = await waiting_run(rt)
    assert await rt.query(exec_id, "cancel") is None

    request_cancel(rt, exec_id, "user stopped the session")

    assert await rt.query(exec_id, "cancel") == "user stopped the session"


async def test_declarative_handlers_serve_their_workflow_and_the_body_wins(
    rt: SqliteRuntime,
) -> None:
    exec_id = await waiting_run(rt)

    assert await rt.query(exec_id, "phase", "x") == "order-7:x"
    assert (
        await rt.query(exec_id, "stage") == "waiting"
    )  # not "the declarative handler"
    with pytest.raises(QueryNotFound) as missing:
        await rt.query(exec_id, "audit_only")
    assert "phase" in missing.value.known
    assert "stage" in missing.value.known


async def test_the_replayer_answers_declarative_queries_as_of_a_prefix_and_the_body_wins(
    rt: SqliteRuntime,
) -> None:
    exec_id = await waiting_run(rt)
    history = rt.load_history(exec_id)
    replayer = WorkflowReplayer([order, phase, declared_stage, audit_only])

    assert replayer.query(history[:1], "phase", "x") == "order-7:x"
    assert (
        replayer.query(history[:1], "stage") == "reserving"
    )  # the body's handler, not the declared one
    assert replayer.query(history, "stage") == "waiting"
    with pytest.raises(QueryNotFound) as missing:
        replayer.query(history, "audit_only")  # declared for another workflow
    assert "phase" in missing.value.known
    assert "late" in missing.value.known
    with pytest.raises(QueryNotFound):
        WorkflowReplayer([order]).query(history, "phase")  # not given to this replayer


async def test_the_query_errors(rt: SqliteRuntime) -> None:
    exec_id = await waiting_run(rt)

    with pytest.raises(QueryNotFound):
        await rt.query(exec_id, "nope")
    with pytest.raises(QueryFailed, match="ZeroDivisionError"):
        await rt.query(exec_id, "boom")
    with pytest.raises(QueryFailed, match="not JSON"):
        await rt.query(exec_id, "not_json")
    with pytest.raises(QueryFailed, match="IndexError"):
        await rt.query(exec_id, "item", 5)
    with pytest.raises(QueryTimedOut):
        await rt.query(exec_id, "forever")  # it awaits what no replay resolves
    with pytest.raises(ExecutionNotFound):
        await rt.query(ExecutionId.new(), "stage")


async def test_a_query_of_a_run_whose_code_diverged_is_non_determinism(
    open_rt: Open,
) -> None:
    rt = register(open_rt())
    exec_id = await waiting_run(rt)
    rt.close()
    changed = open_rt()
    changed.register_workflow(order_changed)

    with pytest.raises(NonDeterminismDetected) as diverged:
        await changed.query(exec_id, "stage")
    assert "ActivityScheduled" in diverged.value.recorded
    assert "TimerStarted" in diverged.value.expected


async def test_a_query_reads_the_rows_when_made_so_a_later_drive_does_not_change_it(
    rt: SqliteRuntime,
) -> None:
    exec_id = await waiting_run(rt)
    made_before = rt.query(
        exec_id, "stage"
    )  # guide §8: the call reads the rows at once

    rt.send_signal(exec_id, "approve", "ok")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()

    assert await made_before == "waiting"
    assert await rt.query(exec_id, "stage") == "sleeping"


async def test_a_query_timeout_set_later_does_not_change_a_query_already_made(
    open_rt: Open, clock: ManualClock
) -> None:
    @workflow
    async def slow(ctx: WorkflowContext, _: Any) -> None:
        # A handler that takes 2 s of the runtime's clock.
        ctx.register_query("slow", lambda: clock.advance("2s").isoformat())
        await ctx.wait_for_signal("never")

    rt = open_rt()
    rt.register_workflow(slow)
    exec_id = rt.start_workflow("slow", None)
    await rt.run_until_blocked(exec_id)

    assert isinstance(await rt.query(exec_id, "slow"), str)  # the default is 5 s
    made_before = asyncio.ensure_future(rt.query(exec_id, "slow"))
    rt.set_query_timeout("1s")
    assert isinstance(await made_before, str)
    with pytest.raises(QueryTimedOut) as late:
        await rt.query(exec_id, "slow")
    assert late.value.seconds == 1.0
    with pytest.raises(ValueError, match="query timeout must be positive"):
        rt.set_query_timeout(0)


async def test_a_cached_instance_and_a_fresh_replay_answer_the_same(
    open_rt: Open,
) -> None:
    rt = register(open_rt())
    exec_id = await waiting_run(rt)
    assert len(rt.cache) == 1

    from_cache_era = [await rt.query(exec_id, n) for n in ("stage", "late")]
    assert len(rt.cache) == 1  # the query neither took nor evicted it
    rt.cache.clear()
    fresh = [await rt.query(exec_id, n) for n in ("stage", "late")]
    rt.close()
    reopened = register(open_rt())
    after_reopen = [await reopened.query(exec_id, n) for n in ("stage", "late")]

    expected = ["waiting", "registered after the first activity"]
    assert from_cache_era == fresh == after_reopen == expected


async def test_a_query_does_not_advance_the_instance_the_decider_caches(
    rt: SqliteRuntime,
) -> None:
    exec_id = await waiting_run(rt)
    for _ in range(3):
        await rt.query(exec_id, "stage")
    hits = rt.cache.hits

    rt.send_signal(exec_id, "approve", "yes")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()

    assert rt.cache.hits == hits + 1
    assert await rt.query(exec_id, "stage") == "sleeping"


async def test_code_past_the_last_recorded_event_runs_again_in_each_query(
    open_rt: Open,
) -> None:
    calls: list[int] = []

    @workflow
    async def effects(ctx: WorkflowContext, _: Any) -> None:
        value = await ctx.side_effect(lambda: calls.append(1) or len(calls))
        ctx.register_query("value", lambda: value)
        await ctx.wait_for_signal("never")

    rt = open_rt()
    rt.register_workflow(effects)
    exec_id = rt.start_workflow("effects", None)
    before = file_rows(rt)

    assert await rt.query(exec_id, "value") == 1
    assert await rt.query(exec_id, "value") == 2  # not recorded, so it ran again
    assert file_rows(rt) == before
    await rt.run_until_blocked(exec_id)  # now the drive records it
    recorded = await rt.query(exec_id, "value")
    assert await rt.query(exec_id, "value") == recorded
    assert len(calls) == 3


async def test_queries_answer_across_a_reopen(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = register(open_rt())
    exec_id = await waiting_run(rt)
    rt.send_signal(exec_id, "approve", "before the reopen")
    await rt.run_until_blocked(exec_id)
    rt.close()

    rt = register(open_rt())
    assert await rt.query(exec_id, "stage") == "sleeping"
    assert await rt.query(exec_id, "item", 1) == "before the reopen"
    clock.advance("2h")
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output=["did reserve", "before the reopen"]
    )
    assert await rt.query(exec_id, "stage") == "done"
