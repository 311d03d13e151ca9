"""Eager start (runtime/serving/eager.py): a body that never waits needs no task; one that waits goes on in one.

A batch of activity bodies used to cost one asyncio task each. The eager
start runs a body's first step at once: finished there, it gives the value;
suspended, a task carries on from the very await it stopped at, with the
same cancellation and context a task started normally would have.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import TYPE_CHECKING

import pytest

from harvest_engine import (
    ActivityContext,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.runtime.serving import eager

if TYPE_CHECKING:
    from pathlib import Path

where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="caller")


async def test_a_body_that_never_waits_finishes_in_its_first_step_without_a_task() -> (
    None
):
    async def body() -> int:
        return 41 + 1

    before = len(asyncio.all_tasks())
    started = eager.start(body())
    assert started.done
    assert started.task is None
    assert started.value == 42
    assert len(asyncio.all_tasks()) == before


async def test_a_body_that_waits_ran_its_first_step_and_resumes_in_a_task() -> None:
    steps: list[str] = []
    gate: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def body() -> int:
        steps.append("first")
        value = await gate
        steps.append("second")
        return value * 2

    started = eager.start(body())
    assert not started.done
    assert steps == ["first"]  # before start() returned
    assert started.task is not None
    gate.set_result(21)
    assert await started.task == 42
    assert steps == ["first", "second"]


async def test_a_body_that_yields_to_the_loop_goes_on_after_its_turn() -> None:
    async def body() -> str:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return "done"

    started = eager.start(body())
    assert started.task is not None
    assert await started.task == "done"


async def test_cancelling_the_task_reaches_the_await_the_body_stopped_at() -> None:
    seen: list[str] = []
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def body() -> None:
        try:
            await gate
        except asyncio.CancelledError:
            seen.append("cancelled at the await")
            raise

    started = eager.start(body())
    assert started.task is not None
    await asyncio.sleep(0)  # the task is now waiting on the gate
    started.task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await started.task
    assert started.task.cancelled()
    assert seen == ["cancelled at the await"]


async def test_an_error_of_the_first_step_is_kept_for_the_reader_as_a_task_keeps_it() -> (
    None
):
    async def body() -> None:
        raise LookupError("first step")

    started = eager.start(body())
    assert started.task is not None
    assert started.task.done()
    with pytest.raises(LookupError, match="first step"):
        started.task.result()


async def test_an_error_after_the_wait_ends_the_task_with_it() -> None:
    async def body() -> None:
        await asyncio.sleep(0)
        raise KeyError("later")

    started = eager.start(body())
    assert started.task is not None
    with pytest.raises(KeyError, match="later"):
        await started.task


async def test_the_first_step_and_the_rest_share_one_context_apart_from_the_callers() -> (
    None
):
    async def body() -> str:
        where.set("body")
        await asyncio.sleep(0)
        return where.get()

    started = eager.start(body())
    assert where.get() == "caller"  # the body's set did not leak out
    assert started.task is not None
    assert await started.task == "body"


@activity
async def quick(ctx: ActivityContext, x: int) -> int:
    return x + 1


@activity
async def yielding(ctx: ActivityContext, x: int) -> int:
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return x + 10


@workflow
async def mixed(ctx: WorkflowContext, x: int) -> int:
    x = await ctx.execute_activity(quick, x)
    x = await ctx.execute_activity(yielding, x)
    return int(await ctx.execute_activity(quick, x))


def _histories(db_path: Path, *, group_commit: bool) -> list[list[tuple[str, object]]]:
    rt = SqliteRuntime.open(db_path)
    rt.register_workflow(mixed)
    rt.register_activity(quick)
    rt.register_activity(yielding)
    rt.settings.group_commit = group_commit
    try:
        ids = [rt.start_workflow("mixed", i) for i in range(12)]
        asyncio.run(rt.run_until_idle())
        for exec_id in ids:
            state = asyncio.run(rt.run_until_blocked(exec_id))
            assert isinstance(state, RunState.Completed)
        return [
            [(e.type, e.attrs.get("result")) for e in rt.load_history(exec_id)]
            for exec_id in ids
        ]
    finally:
        rt.close()


def test_a_batch_of_quick_and_waiting_bodies_records_what_one_at_a_time_records(
    tmp_path: Path,
) -> None:
    batched = _histories(tmp_path / "batched.db", group_commit=True)
    alone = _histories(tmp_path / "alone.db", group_commit=False)
    assert batched == alone
    assert [h[-1] for h in batched] == [("WorkflowCompleted", None)] * 12
    assert [h[-2][1] for h in batched] == [i + 12 for i in range(12)]
