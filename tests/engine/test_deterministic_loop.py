"""The deterministic loop: asyncio works inside workflows, the outside world is refused by name."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from harvest_engine import (
    ContinueAsNew,
    NonDeterministicCall,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowPanicked,
    activity,
    workflow,
)
from harvest_engine.workflow.loop import DeterministicLoop


@activity
async def echo(ctx: Any, value: Any) -> Any:
    return value


def runtime(*workflows: Any) -> SqliteRuntime:
    rt = SqliteRuntime.open_in_memory()
    for wf in workflows:
        rt.register_workflow(wf)
    rt.register_activity(echo)
    return rt


async def drive(rt: SqliteRuntime, name: str, input: Any = None) -> RunState:
    exec_id = rt.start_workflow(name, input)
    return await rt.run_until_blocked(exec_id)


def test_loop_runs_callbacks_in_fifo_order() -> None:
    loop = DeterministicLoop()  # type: ignore[abstract]
    seen: list[int] = []
    for i in range(5):
        loop.call_soon(seen.append, i)
    loop.run_until_quiescent()
    assert seen == [0, 1, 2, 3, 4]


async def test_gather_of_activities_returns_results_in_argument_order() -> None:
    @workflow
    async def fan_out(ctx: WorkflowContext, n: int) -> list[int]:
        return list(
            await asyncio.gather(*(ctx.execute_activity(echo, i) for i in range(n)))
        )

    with runtime(fan_out) as rt:
        assert await drive(rt, "fan_out", 5) == RunState.Completed(
            output=[0, 1, 2, 3, 4]
        )


async def test_tasks_futures_and_events_work_on_the_workflow_loop() -> None:
    @workflow
    async def coordinated(ctx: WorkflowContext, _: Any) -> list[str]:
        order: list[str] = []
        ready = asyncio.Event()
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def waiter() -> None:
            await ready.wait()
            order.append("woke")
            fut.set_result("done")

        task = asyncio.create_task(waiter())
        await asyncio.sleep(0)  # allowed: yields to the loop without a clock
        order.append("set")
        ready.set()
        order.append(await fut)
        await task
        return order

    with runtime(coordinated) as rt:
        assert await drive(rt, "coordinated") == RunState.Completed(
            output=["set", "woke", "done"]
        )


async def test_ctx_wait_returns_done_and_pending_as_lists_in_input_order() -> None:
    @workflow
    async def waits(ctx: WorkflowContext, _: Any) -> dict[str, Any]:
        slow = ctx.timer(60)
        fast = [ctx.execute_activity(echo, i) for i in range(3)]
        done, pending = await ctx.wait(
            [*fast, slow], return_when=asyncio.FIRST_COMPLETED
        )
        first = [d.result() for d in done]
        done, pending = await ctx.wait([*done, *pending])
        return {"first": first, "all": len(done), "pending": len(pending)}

    with runtime(waits) as rt:
        exec_id = rt.start_workflow("waits")
        assert isinstance(await rt.run_until_blocked(exec_id), RunState.WaitingTimer)


async def test_as_completed_yields_in_completion_order() -> None:
    @workflow
    async def racing(ctx: WorkflowContext, _: Any) -> list[Any]:
        results = []
        for next_done in ctx.as_completed(
            [ctx.execute_activity(echo, i) for i in range(3)]
        ):
            results.append(await next_done)
        return results

    with runtime(racing) as rt:
        assert await drive(rt, "racing") == RunState.Completed(output=[0, 1, 2])


@pytest.mark.parametrize(
    ("body", "call_named"),
    [
        ("time.time()", "time.time()"),
        ("time.sleep(0.001)", "time.sleep()"),
        ("await asyncio.sleep(1)", "asyncio.sleep(d > 0)"),
        (
            "await asyncio.wait_for(asyncio.get_running_loop().create_future(), 5)",
            "asyncio.wait_for",
        ),
        ("await asyncio.to_thread(print)", "asyncio.to_thread"),
        ("open('/etc/hostname')", "open()"),
        ("threading.Thread(target=print).start()", "threading.Thread.start()"),
        (
            "await asyncio.get_running_loop().getaddrinfo('localhost', 80)",
            "getaddrinfo",
        ),
    ],
)
async def test_outside_world_calls_raise_non_deterministic_call_naming_the_call(
    body: str, call_named: str
) -> None:
    namespace: dict[str, Any] = {
        "asyncio": asyncio,
        "time": time,
        "threading": threading,
        "echo": echo,
    }
    exec(f"async def forbidden(ctx, _):\n    {body}\n", namespace)
    forbidden = workflow(namespace["forbidden"])
    with runtime(forbidden) as rt:
        exec_id = rt.start_workflow("forbidden")
        with pytest.raises(WorkflowPanicked) as caught:
            await rt.run_until_blocked(exec_id)
        cause = caught.value.__cause__
        assert isinstance(cause, NonDeterministicCall)
        assert call_named in str(cause)
        assert "instead" in str(cause)


async def test_asyncio_timeout_is_refused_with_the_ctx_alternative() -> None:
    @workflow
    async def timed(ctx: WorkflowContext, _: Any) -> None:
        async with asyncio.timeout(5):
            await ctx.execute_activity(echo, 1)

    with runtime(timed) as rt:
        exec_id = rt.start_workflow("timed")
        with pytest.raises(WorkflowPanicked) as caught:
            await rt.run_until_blocked(exec_id)
        assert "asyncio.timeout" in str(caught.value.__cause__)
        assert "wait_for_signal_timeout" in str(caught.value.__cause__)


async def test_a_refused_call_swallowed_by_user_code_still_fails_the_cycle() -> None:
    @workflow
    async def sneaky(ctx: WorkflowContext, _: Any) -> str:
        try:
            time.time()
        except Exception as exc:  # what a careless user writes
            del exc
        return "got away with it"

    with runtime(sneaky) as rt:
        exec_id = rt.start_workflow("sneaky")
        with pytest.raises(WorkflowPanicked):
            await rt.run_until_blocked(exec_id)
        assert rt.outcome(exec_id) == rt.outcome(exec_id)  # still RUNNING, readable
        assert type(rt.outcome(exec_id)).__name__ == "ExecutionOutcome.Running"


def test_continue_as_new_is_a_base_exception_that_except_exception_cannot_swallow() -> (
    None
):
    assert issubclass(ContinueAsNew, BaseException)
    assert not issubclass(ContinueAsNew, Exception)


def test_wall_clock_is_unaffected_outside_workflow_code() -> None:
    before = time.time()
    loop = DeterministicLoop()  # type: ignore[abstract]
    loop.call_soon(lambda: None)
    loop.run_until_quiescent()
    assert time.time() >= before
    time.sleep(0)
