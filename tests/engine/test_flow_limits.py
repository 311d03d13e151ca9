"""A workflow's and an activity's own limits, and activities in a queue, on both stores.

concurrency, throttle, quota; max_concurrent, rate_limit, schedule_to_start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harvest_engine import (
    ChildWorkflowError,
    ExecutionOutcome,
    InvalidFlowOption,
    ManualClock,
    Queue,
    QuotaExceeded,
    Rate,
    RetryPolicy,
    SqliteRuntime,
    StartOptions,
    UnsupportedFeature,
    WorkflowContext,
    activity,
    workflow,
)

Open = Callable[..., SqliteRuntime]


@workflow(concurrency=2)
async def two_at_once(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.wait_for_signal("done")
    return "ok"


@workflow(throttle=Rate(2, "1s"))
async def throttled(ctx: WorkflowContext, _: Any) -> Any:
    return "ok"


@workflow(quota=Rate(2, "1m"))
async def metered(ctx: WorkflowContext, _: Any) -> Any:
    return "ok"


@workflow
async def spawns_three_metered(ctx: WorkflowContext, _: Any) -> Any:
    """Three detached children of a workflow whose quota is two; what each spawn gave."""
    got = []
    for i in range(3):
        try:
            await ctx.spawn_child_workflow_detached(metered, i)
            got.append("started")
        except ChildWorkflowError as exc:
            got.append(exc.type)
    return got


BODIES: list[str] = []


@activity(max_concurrent=2)
async def model_call(ctx: Any, prompt: str) -> str:
    BODIES.append(prompt)
    return prompt.upper()


@workflow
async def fan_out(ctx: WorkflowContext, n: int) -> Any:
    handles = [ctx.execute_activity(model_call, f"p{i}") for i in range(n)]
    import asyncio

    return await asyncio.gather(*handles)


@activity(rate_limit=Rate(1, "10s"))
async def paced(ctx: Any, value: str) -> str:
    return value


@workflow
async def paced_pair(ctx: WorkflowContext, _: Any) -> Any:
    first = await ctx.execute_activity(paced, "a")
    second = await ctx.execute_activity(paced, "b")
    return [first, second]


SLOW: list[ManualClock] = []


@activity(
    max_concurrent=1,
    schedule_to_start="5s",
    retry=RetryPolicy(max_attempts=2, initial_interval="1s"),
)
async def scarce(ctx: Any, value: str) -> str:
    if SLOW:  # the first attempt holds the only slot for 6 s of the engine's clock
        SLOW.pop().advance("6s")
    return value


@workflow
async def uses_scarce(ctx: WorkflowContext, value: str) -> Any:
    return await ctx.execute_activity(scarce, value)


LIVE = {"now": 0, "most": 0}


@activity(queue="gpu")
async def render(ctx: Any, value: str) -> str:
    import asyncio

    LIVE["now"] += 1
    LIVE["most"] = max(LIVE["most"], LIVE["now"])
    await asyncio.sleep(0.01)  # bodies of one pass run side by side: they overlap
    LIVE["now"] -= 1
    return value


@workflow
async def renders(ctx: WorkflowContext, n: int) -> Any:
    import asyncio

    return await asyncio.gather(
        *(ctx.execute_activity(render, f"r{i}") for i in range(n))
    )


async def test_workflow_concurrency_keeps_the_rest_enqueued(open_rt: Open) -> None:
    rt = open_rt()
    rt.register_workflow(two_at_once)
    ids = [rt.start_workflow("two_at_once", i) for i in range(3)]
    await rt.run_until_idle()
    assert [rt.describe(i).state for i in ids] == ["RUNNING", "RUNNING", "ENQUEUED"]
    assert rt.outcome(ids[2]) == ExecutionOutcome.Enqueued(queue="workflow:two_at_once")
    rt.send_signal(ids[0], "done", None)
    await rt.run_until_idle()
    assert rt.describe(ids[2]).state == "RUNNING"
    info = {q.name: q for q in rt.queues()}["workflow:two_at_once"]
    assert (info.concurrency, info.running, info.waiting) == (2, 2, 0)


async def test_workflow_concurrency_holds_also_for_runs_of_a_named_queue(
    open_rt: Open,
) -> None:
    rt = open_rt()
    rt.register_workflow(two_at_once)
    rt.register_queue(Queue("wide", concurrency=10))
    ids = [
        rt.start_workflow_with_options("two_at_once", i, StartOptions(queue="wide"))
        for i in range(3)
    ]
    await rt.run_until_idle()
    states = [rt.describe(o.exec_id).state for o in ids]
    assert states == ["RUNNING", "RUNNING", "ENQUEUED"]


async def test_throttle_spaces_starts_by_the_engine_clock(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = open_rt()
    rt.register_workflow(throttled)
    ids = [rt.start_workflow("throttled", i) for i in range(3)]
    await rt.run_until_idle()
    assert [rt.describe(i).state for i in ids] == ["COMPLETED", "ENQUEUED", "ENQUEUED"]
    [wait] = rt.where_waiting(ids[1])
    assert wait.held_by == "rate"
    due = rt.next_wakeup()
    assert due is not None
    assert (due - clock.now()).total_seconds() == pytest.approx(0.5)
    clock.advance("0.5s")
    await rt.run_until_idle()
    assert [rt.describe(i).state for i in ids] == ["COMPLETED", "COMPLETED", "ENQUEUED"]


def test_a_start_over_the_quota_is_refused_and_writes_nothing(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = open_rt()
    rt.register_workflow(metered)
    rt.start_workflow("metered", 1)
    rt.start_workflow("metered", 2)
    with pytest.raises(QuotaExceeded) as caught:
        rt.start_workflow("metered", 3)
    assert caught.value.limit == 2  # type: ignore[attr-defined]
    assert sum(rt.counts_by_state().values()) == 2
    clock.advance("61s")
    rt.start_workflow("metered", 4)
    assert sum(rt.counts_by_state().values()) == 3


async def test_a_detached_child_over_its_workflows_quota_raises_in_the_parent(
    open_rt: Open,
) -> None:
    # The quota is the child workflow's own (no option of the spawn names
    # it): the parent's code still learns its start was refused.
    rt = open_rt()
    rt.register_workflow(metered)
    rt.register_workflow(spawns_three_metered)
    parent = rt.start_workflow("spawns_three_metered")
    await rt.run_until_idle()
    assert rt.outcome(parent) == ExecutionOutcome.Completed(
        output=["started", "started", "QuotaExceeded"]
    )
    names = [r.workflow_name for r in rt.list_executions().executions]
    assert names.count("metered") == 2


async def test_max_concurrent_lets_two_attempts_hold_slots_at_once(
    open_rt: Open,
) -> None:
    rt = open_rt()
    rt.register_workflow(fan_out)
    rt.register_activity(model_call)
    BODIES.clear()
    run = rt.start_workflow("fan_out", 5)
    await rt.poll_once()  # the decision schedules five attempts: two get slots
    info = {q.name: q for q in rt.queues()}["activity:model_call"]
    assert (info.concurrency, info.running + info.waiting) == (2, 5)
    assert info.running <= 2
    await rt.run_until_idle()
    assert rt.outcome(run) == ExecutionOutcome.Completed(
        output=["P0", "P1", "P2", "P3", "P4"]
    )
    assert sorted(BODIES) == ["p0", "p1", "p2", "p3", "p4"]


async def test_rate_limit_spaces_attempts_and_the_server_sleeps_until_the_token(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = open_rt()
    rt.register_workflow(paced_pair)
    rt.register_activity(paced)
    run = rt.start_workflow("paced_pair", None)
    await rt.run_until_idle()
    assert rt.describe(run).state == "RUNNING"
    due = rt.next_wakeup()
    assert due is not None
    assert (due - clock.now()).total_seconds() == pytest.approx(10)
    clock.set(due)
    await rt.run_until_idle()
    assert rt.outcome(run) == ExecutionOutcome.Completed(output=["a", "b"])


async def test_an_attempt_waiting_past_schedule_to_start_times_out_and_retries(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = open_rt()
    rt.register_workflow(uses_scarce)
    rt.register_activity(scarce)
    SLOW[:] = [clock]
    first = rt.start_workflow("uses_scarce", "a")
    second = rt.start_workflow("uses_scarce", "b")
    await rt.run_until_idle()  # a's body takes 6 s: b waited past 5 s
    clock.advance("1s")  # b's retry backoff
    await rt.run_until_idle()
    assert rt.outcome(first) == ExecutionOutcome.Completed(output="a")
    assert rt.outcome(second) == ExecutionOutcome.Completed(output="b")
    timed_out, done = rt.activity_attempts(second, "scarce")
    assert (timed_out.outcome, done.outcome) == ("TIMED_OUT", "COMPLETED")
    assert timed_out.error is not None
    assert timed_out.error.type == "ScheduleToStartTimeout"
    assert timed_out.error.details == {"timeout_type": "SCHEDULE_TO_START"}


async def test_activities_naming_a_registered_queue_wait_for_its_slots(
    open_rt: Open,
) -> None:
    rt = open_rt()
    rt.register_queue(Queue("gpu", concurrency=1))
    rt.register_workflow(renders)
    rt.register_activity(render)
    LIVE.update(now=0, most=0)
    run = rt.start_workflow("renders", 3)
    await rt.poll_once()
    gpu = {q.name: q for q in rt.queues()}["gpu"]
    assert (gpu.concurrency, gpu.running, gpu.waiting) == (1, 0, 3)
    await rt.run_until_idle()
    assert rt.outcome(run) == ExecutionOutcome.Completed(output=["r0", "r1", "r2"])
    assert LIVE["most"] == 1


def test_bad_declared_limits_are_refused_at_registration(open_rt: Open) -> None:
    rt = open_rt()

    @workflow(concurrency=0)
    async def none_at_once(ctx: WorkflowContext, _: Any) -> None:
        return None

    @workflow(throttle=3)
    async def not_a_rate(ctx: WorkflowContext, _: Any) -> None:
        return None

    @activity(max_concurrent=-2)
    async def negative(ctx: Any, _: Any) -> None:
        return None

    @activity(schedule_to_start=0)
    async def instant(ctx: Any, _: Any) -> None:
        return None

    @activity(max_concurrent=2, local=True)
    async def local_limited(ctx: Any, _: Any) -> None:
        return None

    for fn in (none_at_once, not_a_rate):
        with pytest.raises(InvalidFlowOption):
            rt.register_workflow(fn)
    for fn in (negative, instant):
        with pytest.raises(InvalidFlowOption):
            rt.register_activity(fn)
    with pytest.raises(UnsupportedFeature, match="max_concurrent"):
        rt.register_activity(local_limited)
    assert rt.queues() == []


@pytest.mark.sqlite_only("Postgres gives a dead worker's slots back with its lease")
async def test_a_slot_held_by_a_writer_that_died_comes_back_at_reopen(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = open_rt()
    rt.register_workflow(fan_out)
    rt.register_activity(model_call)
    run = rt.start_workflow("fan_out", 3)
    await rt.poll_once()  # three attempts wait for max_concurrent=2
    rt._driver.gatekeeper.admit(clock.now())  # two get their slots
    opened = rt.store.ready_tasks(None, clock.now())
    assert len(opened) == 2
    assert rt.store.claim_task(opened[0].id, clock.now()) is not None
    rt.close()  # the writer dies holding a claimed slot: nothing puts it back

    again = open_rt()
    again.register_workflow(fan_out)
    again.register_activity(model_call)
    info = {q.name: q for q in again.queues()}["activity:model_call"]
    assert (info.running, info.waiting) == (2, 1)  # still two slots, never three
    await again.run_until_idle()
    assert again.outcome(run) == ExecutionOutcome.Completed(output=["P0", "P1", "P2"])
    info = {q.name: q for q in again.queues()}["activity:model_call"]
    assert (info.running, info.waiting) == (0, 0)
    outcomes = [a.outcome for a in again.activity_attempts(run, "model_call")]
    assert sorted(outcomes) == ["COMPLETED", "COMPLETED", "COMPLETED", "LOST"]
