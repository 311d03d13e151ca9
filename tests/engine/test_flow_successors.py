"""The commit that ends a queued run admits the next waiting runs and decides them, on both stores."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harvest_engine import (
    ActivityContext,
    Queue,
    SqliteRuntime,
    StartOptions,
    WorkflowContext,
    activity,
    workflow,
)

Open = Callable[..., SqliteRuntime]


@activity
def bump(ctx: ActivityContext, x: int) -> int:
    return x + 1


@workflow
async def two_steps(ctx: WorkflowContext, x: int) -> int:
    x = await ctx.execute_activity(bump, x)
    return int(await ctx.execute_activity(bump, x))


@workflow
async def at_once(ctx: WorkflowContext, x: int) -> int:
    return x


def _open(open_rt: Open, concurrency: int) -> SqliteRuntime:
    rt = open_rt()
    rt.register_workflow(two_steps)
    rt.register_workflow(at_once)
    rt.register_activity(bump)
    rt.register_queue(Queue("q", concurrency=concurrency))
    return rt


def _start(rt: SqliteRuntime, wf: str, x: int) -> Any:
    return rt.start_workflow_with_options(wf, x, StartOptions(queue="q")).exec_id


def _scheduled(rt: SqliteRuntime, exec_id: Any) -> int:
    return sum(e.type == "ActivityScheduled" for e in rt.load_history(exec_id))


async def test_the_pass_that_ends_a_queued_run_starts_its_successor(
    open_rt: Open,
) -> None:
    rt = _open(open_rt, concurrency=1)
    first, second, third = (_start(rt, "two_steps", i) for i in range(3))
    while rt.describe(first).state != "COMPLETED":
        assert await rt.poll_once()
    # Admitted and decided in the commit that ended `first`: no admission
    # pass between, its first activity already scheduled (and claimed).
    assert rt.describe(second).state == "RUNNING"
    assert _scheduled(rt, second) == 1
    assert rt.describe(third).state == "ENQUEUED"
    [info] = rt.queues()
    assert (info.running, info.waiting) == (1, 1)
    await rt.run_until_idle()
    assert [rt.describe(r).output.value for r in (first, second, third)] == [2, 3, 4]  # type: ignore[union-attr]


async def test_successors_that_end_at_once_free_their_slots_in_the_same_commit(
    open_rt: Open,
) -> None:
    rt = _open(open_rt, concurrency=1)
    first = _start(rt, "two_steps", 0)
    quick = [_start(rt, "at_once", i) for i in range(3)]
    last = _start(rt, "two_steps", 10)
    while rt.describe(first).state != "COMPLETED":
        assert await rt.poll_once()
    # Each run without activities ended in its first decision, whose slot
    # the next one took, all in the one commit; the queue never held two.
    assert [rt.describe(r).state for r in quick] == ["COMPLETED"] * 3
    assert rt.describe(last).state == "RUNNING"
    assert _scheduled(rt, last) == 1
    await rt.run_until_idle()
    assert rt.describe(last).output.value == 12  # type: ignore[union-attr]


async def test_a_successor_cancelled_while_it_waited_is_passed_over(
    open_rt: Open,
) -> None:
    rt = _open(open_rt, concurrency=1)
    first, gone, kept = (_start(rt, "two_steps", i) for i in range(3))
    await rt.poll_once()  # `first` admitted and at its first activity
    rt.cancel(gone)
    while rt.describe(first).state != "COMPLETED":
        assert await rt.poll_once()
    assert rt.describe(gone).state == "CANCELLED"
    assert rt.describe(kept).state == "RUNNING"
    assert _scheduled(rt, kept) == 1
    assert _scheduled(rt, gone) == 0
