"""Children and continue-as-new successors go through their queues, on both stores.

A child started with queue options (or of a workflow declaring limits) waits
ENQUEUED until admitted while its parent waits on it; a refusal by its queue
reaches the parent as a ChildWorkflowError of the refusal's type; a
continue-as-new successor is admitted like a fresh start, so a chain never
skips its workflow's `concurrency`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harvest_engine import (
    ApplicationError,
    ChildWorkflowError,
    ExecutionOutcome,
    InvalidFlowOption,
    ManualClock,
    ParentClosePolicy,
    Queue,
    RetryPolicy,
    SqliteRuntime,
    StartOptions,
    Stored,
    WorkflowContext,
    workflow,
)

Open = Callable[..., SqliteRuntime]


@workflow
async def leaf(ctx: WorkflowContext, value: Any) -> Any:
    await ctx.wait_for_signal("go")
    return value


@workflow
async def quick(ctx: WorkflowContext, value: Any) -> Any:
    return value


@workflow
async def parent_of_queued(ctx: WorkflowContext, n: int) -> Any:
    import asyncio

    return await asyncio.gather(
        *(
            ctx.spawn_child_workflow(
                leaf, i, queue="kids", priority=n - i, partition_key="p"
            )
            for i in range(n)
        )
    )


@workflow(concurrency=1)
async def solo(ctx: WorkflowContext, value: Any) -> Any:
    await ctx.wait_for_signal("go")
    return value


@workflow
async def parent_of_solo(ctx: WorkflowContext, n: int) -> Any:
    import asyncio

    return await asyncio.gather(*(ctx.spawn_child_workflow(solo, i) for i in range(n)))


@workflow
async def parent_of_unknown_queue(ctx: WorkflowContext, _: Any) -> Any:
    try:
        await ctx.spawn_child_workflow(quick, 1, queue="nowhere")
    except ChildWorkflowError as exc:
        return exc.type
    return "started"


@workflow
async def parent_of_duplicates(ctx: WorkflowContext, _: Any) -> Any:
    first = await ctx.spawn_child_workflow_detached(leaf, 1, queue="kids", dedup_id="d")
    try:
        await ctx.spawn_child_workflow_detached(quick, 2, queue="kids", dedup_id="d")
    except ChildWorkflowError as exc:
        return [exc.type, exc.details["exec_id"] == str(first)]
    return "started"


@workflow
async def parent_leaves_a_queued_child(ctx: WorkflowContext, _: Any) -> Any:
    return str(
        await ctx.spawn_child_workflow_detached(
            leaf, 1, ParentClosePolicy.REQUEST_CANCEL, queue="kids"
        )
    )


@workflow
async def parent_of_bad_priority(ctx: WorkflowContext, _: Any) -> Any:
    try:
        await ctx.spawn_child_workflow(quick, 1, queue="kids", priority=-1)
    except InvalidFlowOption:
        return "refused at the call"
    return "started"


@workflow
async def parent_of_delayed(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.spawn_child_workflow(
        quick, "late", queue="kids", start_delay="10s", execution_timeout="5s"
    )


@workflow(concurrency=1)
async def looping(ctx: WorkflowContext, left: int) -> Any:
    if left > 0:
        await ctx.wait_for_signal("next")
        ctx.continue_as_new(left - 1)
    return "done"


@workflow(concurrency=1, retry=RetryPolicy(max_attempts=2, initial_interval="10s"))
async def flaky_solo(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.wait_for_signal("next")
    if ctx.info().attempt == 1:
        raise ApplicationError("first attempt fails")
    return "second"


@workflow
async def looping_in_queue(ctx: WorkflowContext, left: int) -> Any:
    if left > 0:
        ctx.continue_as_new(left - 1)
    return "done"


def _runs(rt: SqliteRuntime) -> list[Any]:
    return rt.list_executions().executions


def _states(rt: SqliteRuntime, ids: list[str]) -> list[str]:
    return [rt.describe(i).state for i in ids]


async def test_a_child_started_into_a_queue_waits_enqueued_until_admitted(
    open_rt: Open,
) -> None:
    rt = open_rt()
    for fn in (leaf, parent_of_queued):
        rt.register_workflow(fn)
    rt.register_queue(Queue("kids", concurrency=1, priority=True))
    parent = rt.start_workflow("parent_of_queued", 3)
    await rt.run_until_idle()
    children = sorted(
        (r for r in _runs(rt) if r.workflow_name == "leaf"),
        key=lambda r: r.exec_id,
    )
    assert sorted(r.state for r in children) == ["ENQUEUED", "ENQUEUED", "RUNNING"]
    running = next(r for r in children if r.state == "RUNNING")
    # The highest priority (lowest number: the last child) went first.
    assert rt.describe(running.exec_id).input == Stored.Value(2)
    waiting = next(r for r in children if r.state == "ENQUEUED")
    [wait] = rt.where_waiting(waiting.exec_id)
    assert (wait.kind, wait.name) == ("queue", "kids")
    assert {w.kind for w in rt.where_waiting(parent)} == {"child"}
    assert rt.describe(parent).state == "RUNNING"
    for _ in range(3):
        live = next(
            r for r in _runs(rt) if r.workflow_name == "leaf" and r.state == "RUNNING"
        )
        rt.send_signal(live.exec_id, "go", None)
        await rt.run_until_idle()
    assert rt.outcome(parent) == ExecutionOutcome.Completed(output=[0, 1, 2])


async def test_a_child_of_a_workflow_with_concurrency_waits_for_its_slot(
    open_rt: Open,
) -> None:
    rt = open_rt()
    for fn in (solo, parent_of_solo):
        rt.register_workflow(fn)
    parent = rt.start_workflow("parent_of_solo", 3)
    await rt.run_until_idle()
    kids = [r for r in _runs(rt) if r.workflow_name == "solo"]
    assert sorted(r.state for r in kids) == ["ENQUEUED", "ENQUEUED", "RUNNING"]
    for _ in range(3):
        [live] = [
            r for r in _runs(rt) if r.workflow_name == "solo" and r.state == "RUNNING"
        ]
        rt.send_signal(live.exec_id, "go", None)
        await rt.run_until_idle()
        running = [
            r for r in _runs(rt) if r.workflow_name == "solo" and r.state == "RUNNING"
        ]
        assert len(running) <= 1  # the workflow's concurrency holds for its children
    assert rt.outcome(parent) == ExecutionOutcome.Completed(output=[0, 1, 2])


async def test_a_queue_refusing_a_child_reaches_the_parent_by_type(
    open_rt: Open,
) -> None:
    rt = open_rt()
    for fn in (quick, leaf, parent_of_unknown_queue, parent_of_duplicates):
        rt.register_workflow(fn)
    rt.register_queue(Queue("kids", concurrency=5))
    unknown = rt.start_workflow("parent_of_unknown_queue")
    dup = rt.start_workflow("parent_of_duplicates")
    await rt.run_until_idle()
    assert rt.outcome(unknown) == ExecutionOutcome.Completed(output="UnknownQueue")
    assert [r.workflow_name for r in _runs(rt)].count("quick") == 0
    assert rt.outcome(dup) == ExecutionOutcome.Completed(
        output=["DuplicateEnqueue", True]
    )


async def test_a_bad_child_queue_option_raises_in_the_workflow_code(
    open_rt: Open,
) -> None:
    rt = open_rt()
    for fn in (quick, parent_of_bad_priority):
        rt.register_workflow(fn)
    run = rt.start_workflow("parent_of_bad_priority")
    await rt.run_until_idle()
    assert rt.outcome(run) == ExecutionOutcome.Completed(output="refused at the call")


async def test_a_delayed_child_counts_its_own_timeout_from_its_admission(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = open_rt()
    for fn in (quick, parent_of_delayed):
        rt.register_workflow(fn)
    rt.register_queue(Queue("kids", concurrency=1))
    run = rt.start_workflow("parent_of_delayed")
    await rt.run_until_idle()
    [child] = [r for r in _runs(rt) if r.workflow_name == "quick"]
    [wait] = rt.where_waiting(child.exec_id)
    assert wait.held_by == "start_delay"
    clock.advance("10s")
    await rt.poll_once()  # admitted now: its 5 s count from here, not the start
    deadline = rt.describe(child.exec_id).deadline
    assert deadline is not None
    assert (deadline - clock.now()).total_seconds() == pytest.approx(5.0)
    await rt.run_until_idle()
    assert rt.outcome(run) == ExecutionOutcome.Completed(output="late")


async def test_a_continue_as_new_successor_never_skips_its_concurrency(
    open_rt: Open,
) -> None:
    rt = open_rt()
    rt.register_workflow(looping)
    first = rt.start_workflow("looping", 2)
    other = rt.start_workflow("looping", 1)
    await rt.run_until_idle()
    assert _states(rt, [first, other]) == ["RUNNING", "ENQUEUED"]
    rt.send_signal(first, "next", None)
    await rt.run_until_idle()
    # The successor waits behind the run already waiting, which goes first.
    successor = rt.describe(first).successor
    assert successor is not None
    assert _states(rt, [other, successor]) == ["RUNNING", "ENQUEUED"]
    signalled = 2
    while True:
        running = [r.exec_id for r in _runs(rt) if r.state == "RUNNING"]
        assert len(running) <= 1  # never two RUNNING, chains or not
        if not running:
            break
        rt.send_signal(running[0], "next", None)
        await rt.run_until_idle()
        signalled += 1
    assert signalled == 4  # each of the three signals found one RUNNING run
    counts = rt.counts_by_state()
    assert counts.get("ENQUEUED", 0) == 0
    assert (counts["COMPLETED"], counts["CONTINUED_AS_NEW"]) == (2, 3)


async def test_a_continue_as_new_successor_keeps_its_queue_and_options(
    open_rt: Open,
) -> None:
    rt = open_rt()
    rt.register_workflow(looping_in_queue)
    rt.register_workflow(leaf)
    rt.register_queue(Queue("lane", concurrency=1, priority=True))
    ahead = StartOptions(queue="lane", priority=1, partition_key="k")
    first_blocker = rt.start_workflow_with_options("leaf", 1, ahead)
    await rt.run_until_idle()  # holds the lane's one slot
    started = rt.start_workflow_with_options(
        "looping_in_queue",
        1,
        StartOptions(queue="lane", priority=7, partition_key="k", dedup_id="once"),
    )
    # Same priority, earlier than the successor will be: admitted when the loop ends.
    second_blocker = rt.start_workflow_with_options(
        "leaf", 2, StartOptions(queue="lane", priority=7, partition_key="k")
    )
    rt.send_signal(first_blocker.exec_id, "go", None)
    await rt.run_until_idle()
    assert rt.describe(second_blocker.exec_id).state == "RUNNING"
    successor = rt.describe(started.exec_id).successor
    assert successor is not None
    assert rt.describe(successor).state == "ENQUEUED"
    with rt.store.flow_reads() as reads:
        wait = reads.wait_of(str(successor))
    assert wait is not None
    assert (wait.queue, wait.priority, wait.partition_key, wait.dedup_id) == (
        "lane",
        7,
        "k",
        "once",
    )
    rt.send_signal(second_blocker.exec_id, "go", None)
    await rt.run_until_idle()
    assert rt.outcome(successor) == ExecutionOutcome.Completed(output="done")


async def test_a_retry_waits_out_its_backoff_enqueued_and_queues_again(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = open_rt()
    rt.register_workflow(flaky_solo)
    first = rt.start_workflow("flaky_solo")
    other = rt.start_workflow("flaky_solo")
    await rt.run_until_idle()
    rt.send_signal(first, "next", None)
    await rt.run_until_idle()  # fails: its retry waits 10 s, holding no slot
    retry = rt.describe(first).successor
    assert retry is not None
    assert _states(rt, [other, retry]) == ["RUNNING", "ENQUEUED"]
    [wait] = rt.where_waiting(retry)
    assert wait.held_by == "start_delay"
    clock.advance("11s")
    await rt.run_until_idle()
    assert _states(rt, [other, retry]) == ["RUNNING", "ENQUEUED"]  # one at once
    for _ in range(6):
        live = [r.exec_id for r in _runs(rt) if r.state in ("RUNNING", "ENQUEUED")]
        running = [r.exec_id for r in _runs(rt) if r.state == "RUNNING"]
        assert len(running) <= 1
        if not live:
            break
        for run in running:
            rt.send_signal(run, "next", None)
        clock.advance("11s")
        await rt.run_until_idle()
    assert rt.outcome(retry) == ExecutionOutcome.Completed(output="second")


async def test_a_parent_closing_cancels_its_enqueued_child_and_frees_its_place(
    open_rt: Open,
) -> None:
    rt = open_rt()
    for fn in (leaf, parent_leaves_a_queued_child):
        rt.register_workflow(fn)
    rt.register_queue(Queue("kids", concurrency=1))
    blocker = rt.start_workflow_with_options("leaf", 0, StartOptions(queue="kids"))
    await rt.run_until_idle()
    parent = rt.start_workflow("parent_leaves_a_queued_child")
    await rt.run_until_idle()
    outcome = rt.outcome(parent)
    assert isinstance(outcome, ExecutionOutcome.Completed)
    child = str(outcome.output)
    assert rt.describe(child).state == "CANCELLED"  # its parent-close policy
    info = {q.name: q for q in rt.queues()}["kids"]
    assert (info.running, info.waiting) == (1, 0)
    assert rt.describe(blocker.exec_id).state == "RUNNING"
