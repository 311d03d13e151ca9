"""Activities: async on the loop, sync off it, ActivityContext, retries, timeouts, payload caps."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityContext,
    ActivityError,
    ApplicationError,
    ManualClock,
    RetryPolicy,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.payloads import MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH

if TYPE_CHECKING:
    from pathlib import Path

Open = Callable[..., SqliteRuntime]


@dataclass
class Order:
    id: str
    qty: int


@dataclass
class Receipt:
    order_id: str
    total: int


def nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


@workflow
async def call_one(ctx: WorkflowContext, spec: dict[str, Any]) -> Any:
    try:
        return {"ok": await ctx.execute_activity(spec["name"], spec.get("input"))}
    except ActivityError as exc:
        return {
            "error": exc.type,
            "message": exc.message,
            "non_retryable": exc.non_retryable,
        }


def runtime_with(open_rt: Open, *activities: Any) -> SqliteRuntime:
    rt = open_rt()
    rt.register_workflow(call_one)
    for act in activities:
        rt.register_activity(act)
    return rt


async def run(rt: SqliteRuntime, name: str, value: Any = None) -> RunState:
    exec_id = rt.start_workflow("call_one", {"name": name, "input": value})
    return await rt.run_until_blocked(exec_id)


async def test_a_sync_activity_body_runs_off_the_event_loop_thread(
    open_rt: Open,
) -> None:
    threads: list[str] = []

    @activity
    def blocking(ctx: ActivityContext, _: Any) -> str:
        threads.append(threading.current_thread().name)
        return "done"

    rt = runtime_with(open_rt, blocking)
    assert await run(rt, "blocking") == RunState.Completed(output={"ok": "done"})
    assert threads
    assert threads[0] != threading.main_thread().name


async def test_activity_context_reports_run_attempt_queue_and_task(
    open_rt: Open,
) -> None:
    seen: dict[str, Any] = {}

    @activity(queue="billing")
    async def inspect_ctx(ctx: ActivityContext, _: Any) -> str:
        info = ctx.info()
        seen.update(
            exec_id=info.exec_id,
            name=info.activity_name,
            attempt=info.attempt,
            max_attempts=info.max_attempts,
            queue=info.queue,
            task_id=info.task_id,
        )
        return ctx.idempotency_key()

    rt = runtime_with(open_rt, inspect_ctx)
    exec_id = rt.start_workflow("call_one", {"name": "inspect_ctx"})
    state = await rt.run_until_blocked(exec_id)
    assert seen["exec_id"] == str(exec_id)
    assert seen == seen | {
        "name": "inspect_ctx",
        "attempt": 1,
        "max_attempts": 1,
        "queue": "billing",
    }
    assert isinstance(seen["task_id"], int)
    assert isinstance(state, RunState.Completed)
    assert str(exec_id) in state.output["ok"]


async def test_idempotency_key_is_stable_across_attempts_and_differs_per_call(
    open_rt: Open, clock: ManualClock
) -> None:
    keys: list[tuple[int, str]] = []

    @activity(retry=RetryPolicy(max_attempts=3, initial_interval="1s"))
    async def keyed(ctx: ActivityContext, _: Any) -> str:
        keys.append((ctx.info().attempt, ctx.idempotency_key()))
        if ctx.info().attempt == 1:
            raise RuntimeError("transient")
        return ctx.idempotency_key()

    @workflow
    async def twice(ctx: WorkflowContext, _: Any) -> list[str]:
        return [await ctx.execute_activity(keyed), await ctx.execute_activity(keyed)]

    rt = open_rt()
    rt.register_workflow(twice)
    rt.register_activity(keyed)
    exec_id = rt.start_workflow("twice")
    for _ in range(4):
        clock.advance(5)
        state = await rt.run_until_blocked(exec_id)
    assert isinstance(state, RunState.Completed)
    first, second = state.output
    assert first != second
    assert [k for a, k in keys if k == first] == [first, first]


async def test_retry_backoff_returns_waiting_timer_until_the_backoff_ends(
    open_rt: Open, clock: ManualClock
) -> None:
    @activity(
        retry=RetryPolicy(max_attempts=3, initial_interval="10s", backoff_coefficient=2)
    )
    async def wobbly(ctx: ActivityContext, _: Any) -> int:
        if ctx.info().attempt < 3:
            raise RuntimeError(f"attempt {ctx.info().attempt}")
        previous = ctx.previous_failure()
        assert previous is not None
        assert (previous.type, previous.message) == ("RuntimeError", "attempt 2")
        assert 'raise RuntimeError(f"attempt' in (previous.stack_trace or "")
        return ctx.info().attempt

    rt = runtime_with(open_rt, wobbly)
    exec_id = rt.start_workflow("call_one", {"name": "wobbly"})
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    clock.advance(9)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    clock.advance(1)
    assert (
        await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    )  # second backoff: 20 s
    clock.advance(20)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output={"ok": 3})
    attempts = rt.activity_attempts(exec_id, "wobbly")
    assert [(a.attempt, a.outcome) for a in attempts] == [
        (1, "FAILED"),
        (2, "FAILED"),
        (3, "COMPLETED"),
    ]


async def test_without_a_retry_policy_an_activity_gets_exactly_one_attempt(
    open_rt: Open,
) -> None:
    runs: list[int] = []

    @activity
    async def once(ctx: ActivityContext, _: Any) -> None:
        runs.append(ctx.info().max_attempts)
        raise RuntimeError("boom")

    rt = runtime_with(open_rt, once)
    state = await run(rt, "once")
    assert state == RunState.Completed(
        output={"error": "RuntimeError", "message": "boom", "non_retryable": False}
    )
    assert runs == [1]


async def test_a_non_retryable_application_error_fails_at_once(open_rt: Open) -> None:
    runs: list[int] = []

    @activity(retry=RetryPolicy(max_attempts=5))
    async def declined(ctx: ActivityContext, _: Any) -> None:
        runs.append(1)
        raise ApplicationError("declined", type="CardDeclined", non_retryable=True)

    rt = runtime_with(open_rt, declined)
    state = await run(rt, "declined")
    assert state == RunState.Completed(
        output={"error": "CardDeclined", "message": "declined", "non_retryable": True}
    )
    assert runs == [1]


async def test_non_retryable_error_types_stop_retries_by_type_name(
    open_rt: Open,
) -> None:
    runs: list[int] = []

    @activity(
        retry=RetryPolicy(max_attempts=5, non_retryable_error_types=["ValueError"])
    )
    async def picky(ctx: ActivityContext, _: Any) -> None:
        runs.append(1)
        raise ValueError("bad input")

    rt = runtime_with(open_rt, picky)
    state = await run(rt, "picky")
    assert isinstance(state, RunState.Completed)
    assert state.output["error"] == "ValueError"
    assert runs == [1]


async def test_start_to_close_times_out_a_slow_async_attempt(open_rt: Open) -> None:
    @activity(start_to_close=0.05)
    async def slow(ctx: ActivityContext, _: Any) -> None:
        await asyncio.sleep(5)

    rt = runtime_with(open_rt, slow)
    state = await run(rt, "slow")
    assert isinstance(state, RunState.Completed)
    assert state.output["error"] == "StartToCloseTimeout"
    exec_id = rt.store.running_exec_ids()  # type: ignore[attr-defined]
    assert exec_id == []


async def test_start_to_close_checks_a_sync_body_when_it_returns(open_rt: Open) -> None:
    import time

    @activity(start_to_close=0.01)
    def sluggish(ctx: ActivityContext, _: Any) -> str:
        time.sleep(0.05)
        return "late"

    rt = runtime_with(open_rt, sluggish)
    state = await run(rt, "sluggish")
    assert isinstance(state, RunState.Completed)
    assert state.output["error"] == "StartToCloseTimeout"


async def test_schedule_to_close_ends_retries_when_the_window_closes(
    open_rt: Open, clock: ManualClock
) -> None:
    @activity(
        retry=RetryPolicy(max_attempts=0, initial_interval="30s"),
        schedule_to_close="1m",
    )
    async def never(ctx: ActivityContext, _: Any) -> None:
        raise RuntimeError("still down")

    rt = runtime_with(open_rt, never)
    exec_id = rt.start_workflow("call_one", {"name": "never"})
    state = await rt.run_until_blocked(exec_id)
    for _ in range(5):
        if not isinstance(state, RunState.WaitingTimer):
            break
        clock.advance(30)
        state = await rt.run_until_blocked(exec_id)
    assert isinstance(state, RunState.Completed)
    assert state.output["error"] == "RuntimeError"
    assert len(rt.activity_attempts(exec_id, "never")) == 2


async def test_heartbeat_details_survive_into_the_next_attempt(
    open_rt: Open, clock: ManualClock
) -> None:
    @activity(retry=RetryPolicy(max_attempts=2, initial_interval="1s"))
    async def resumable(ctx: ActivityContext, _: Any) -> Any:
        if ctx.info().attempt == 1:
            ctx.heartbeat({"done": 40})
            raise RuntimeError("crashed at 40")
        return ctx.heartbeat_details()

    rt = runtime_with(open_rt, resumable)
    exec_id = rt.start_workflow("call_one", {"name": "resumable"})
    await rt.run_until_blocked(exec_id)
    clock.advance(2)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output={"ok": {"done": 40}}
    )


async def test_an_oversized_activity_result_fails_the_activity_without_retry(
    open_rt: Open,
) -> None:
    runs: list[int] = []

    @activity(retry=RetryPolicy(max_attempts=3))
    async def huge(ctx: ActivityContext, _: Any) -> str:
        runs.append(1)
        return "x" * (MAX_PAYLOAD_BYTES + 1)

    @activity(retry=RetryPolicy(max_attempts=3))
    async def deep(ctx: ActivityContext, _: Any) -> Any:
        runs.append(1)
        return nested(MAX_PAYLOAD_DEPTH + 5)

    rt = runtime_with(open_rt, huge, deep)
    large = await run(rt, "huge")
    assert isinstance(large, RunState.Completed)
    assert large.output["error"] == "PayloadTooLarge"
    assert large.output["non_retryable"] is True
    too_deep = await run(rt, "deep")
    assert isinstance(too_deep, RunState.Completed)
    assert too_deep.output["error"] == "PayloadTooDeep"
    assert runs == [1, 1]


async def test_dataclass_inputs_and_results_convert_automatically(
    open_rt: Open,
) -> None:
    @activity
    async def price(ctx: ActivityContext, order: Order) -> Receipt:
        assert isinstance(order, Order)
        return Receipt(order_id=order.id, total=order.qty * 5)

    @workflow
    async def checkout(ctx: WorkflowContext, order: Order) -> Receipt:
        assert isinstance(order, Order)
        receipt = await ctx.execute_activity(price, order)
        assert isinstance(receipt, Receipt)
        return receipt

    rt = open_rt()
    rt.register_workflow(checkout)
    rt.register_activity(price)
    exec_id = rt.start_workflow("checkout", Order(id="o1", qty=3))
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output={"order_id": "o1", "total": 15}
    )


@pytest.mark.parametrize("parallel", [2, 5])
async def test_parallel_activities_each_record_one_completion(
    open_rt: Open, parallel: int
) -> None:
    @activity
    async def square(ctx: ActivityContext, n: int) -> int:
        return n * n

    @workflow
    async def squares(ctx: WorkflowContext, n: int) -> list[int]:
        return list(
            await asyncio.gather(*(ctx.execute_activity(square, i) for i in range(n)))
        )

    rt = open_rt()
    rt.register_workflow(squares)
    rt.register_activity(square)
    exec_id = rt.start_workflow("squares", parallel)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output=[i * i for i in range(parallel)]
    )
    history = rt.load_history(exec_id)
    assert sum(e.type == "ActivityCompleted" for e in history) == parallel


async def test_a_sync_body_can_heartbeat_from_its_worker_thread(
    open_rt: Open, clock: ManualClock
) -> None:
    @activity(retry=RetryPolicy(max_attempts=2, initial_interval="1s"))
    def checkpointing(ctx: ActivityContext, _: Any) -> Any:
        if ctx.info().attempt == 1:
            for i in range(20):
                ctx.heartbeat({"done": i})
            raise RuntimeError("died at 19")
        return ctx.heartbeat_details()

    rt = runtime_with(open_rt, checkpointing)
    exec_id = rt.start_workflow("call_one", {"name": "checkpointing"})
    await rt.run_until_blocked(exec_id)
    clock.advance(2)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output={"ok": {"done": 19}}
    )


async def test_poll_once_runs_the_bodies_of_different_runs_side_by_side(
    open_rt: Open,
) -> None:
    barrier = threading.Barrier(2, timeout=5)

    @activity
    def meet(ctx: ActivityContext, _: Any) -> str:
        barrier.wait()  # returns only when both runs' bodies are running at once
        return "met"

    rt = runtime_with(open_rt, meet)
    first = rt.start_workflow("call_one", {"name": "meet"})
    second = rt.start_workflow("call_one", {"name": "meet"})
    await rt.run_until_idle()
    assert rt.describe(first).output.value == {"ok": "met"}
    assert rt.describe(second).output.value == {"ok": "met"}


async def test_a_result_too_deep_and_too_large_fails_as_payload_too_deep(
    open_rt: Open,
) -> None:
    @activity(retry=RetryPolicy(max_attempts=3))
    async def both(ctx: ActivityContext, _: Any) -> Any:
        return {
            "deep": nested(MAX_PAYLOAD_DEPTH + 5),
            "big": "x" * (MAX_PAYLOAD_BYTES + 1),
        }

    rt = runtime_with(open_rt, both)
    state = await run(rt, "both")
    assert isinstance(state, RunState.Completed)
    assert state.output["error"] == "PayloadTooDeep"
    assert state.output["non_retryable"] is True


async def test_a_heartbeat_over_the_caps_is_dropped_with_a_warning_keeping_the_last_good_one(
    open_rt: Open, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[Any] = []

    @activity(retry=RetryPolicy(max_attempts=2, initial_interval="1s"))
    async def checkpoints(ctx: ActivityContext, _: Any) -> Any:
        seen.append(ctx.heartbeat_details())
        if ctx.info().attempt == 1:
            ctx.heartbeat({"done": 3})
            ctx.heartbeat(nested(MAX_PAYLOAD_DEPTH + 1))
            ctx.heartbeat("x" * (MAX_PAYLOAD_BYTES + 1))
            raise ApplicationError("try again")
        return ctx.heartbeat_details()

    rt = runtime_with(open_rt, checkpoints)
    exec_id = rt.start_workflow("call_one", {"name": "checkpoints"})
    with caplog.at_level("WARNING", logger="harvest_engine.activity"):
        assert await rt.run_until_blocked(exec_id) == RunState.WaitingTimer()
    dropped = [r for r in caplog.records if "heartbeat dropped" in r.getMessage()]
    assert len(dropped) == 2
    clock.advance(2)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output={"ok": {"done": 3}}
    )
    assert seen == [None, {"done": 3}]


def stranded_tasks(rt: SqliteRuntime) -> list[Any]:
    """Tasks left RUNNING: a live runtime would never run them again before a reopen."""
    return rt.store.connection.execute(  # type: ignore[attr-defined]
        "SELECT id FROM harvest_tasks WHERE status = 'RUNNING'"
    ).fetchall()


async def test_a_result_that_is_not_json_fails_the_activity_and_leaves_no_task_running(
    open_rt: Open, db_path: Path
) -> None:
    runs: list[int] = []

    @activity(retry=RetryPolicy(max_attempts=3))
    async def returns_a_set(ctx: ActivityContext, _: Any) -> Any:
        runs.append(1)
        return {1, 2}

    rt = runtime_with(open_rt, returns_a_set)
    state = await run(rt, "returns_a_set")
    assert isinstance(state, RunState.Completed)
    assert state.output["error"] == "TypeError"
    assert "not a JSON value" in state.output["message"]
    assert state.output["non_retryable"] is True
    assert runs == [1]
    assert stranded_tasks(rt) == []


async def test_an_input_that_does_not_fit_the_dataclass_fails_the_attempt_like_the_body(
    open_rt: Open, db_path: Path
) -> None:
    @activity
    async def price(ctx: ActivityContext, order: Order) -> int:
        return order.qty

    rt = runtime_with(open_rt, price)
    state = await run(rt, "price", {"wrong": 1})
    assert isinstance(state, RunState.Completed)
    assert state.output["error"] == "TypeError"
    assert stranded_tasks(rt) == []


async def test_error_details_that_are_not_json_are_dropped_and_the_failure_recorded(
    open_rt: Open, db_path: Path
) -> None:
    @activity
    async def odd_details(ctx: ActivityContext, _: Any) -> Any:
        raise ApplicationError("boom", type="Odd", details={1, 2})

    rt = runtime_with(open_rt, odd_details)
    state = await run(rt, "odd_details")
    assert isinstance(state, RunState.Completed)
    assert state.output["error"] == "Odd"
    assert (
        state.output["message"] == "boom (details dropped: a set is not a JSON value)"
    )
    assert stranded_tasks(rt) == []


async def test_a_ledger_body_with_malformed_calls_fails_the_activity_without_a_running_task(
    open_rt: Open, db_path: Path
) -> None:
    @activity
    async def summarise(ctx: ActivityContext, _: Any) -> Any:
        return None

    rt = runtime_with(open_rt)
    rt.register_activity_with_ledger(summarise, lambda _: ("text", [{"not": "a call"}]))
    state = await run(rt, "summarise")
    assert isinstance(state, RunState.Completed)
    assert state.output["error"] == "TypeError"
    assert stranded_tasks(rt) == []
