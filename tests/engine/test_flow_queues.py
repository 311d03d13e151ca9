"""Queues on both stores: ENQUEUED runs, concurrency, priority, partitions, dedup, delay, rate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harvest_engine import (
    DuplicateEnqueue,
    ExecutionFilter,
    ExecutionOutcome,
    InvalidFlowOption,
    ManualClock,
    Queue,
    Rate,
    SqliteRuntime,
    StartOptions,
    UnknownQueue,
    WorkflowContext,
    workflow,
)

Open = Callable[..., SqliteRuntime]


@workflow
async def gated(ctx: WorkflowContext, name: Any) -> Any:
    await ctx.wait_for_signal("done")
    return name


@workflow
async def quick(ctx: WorkflowContext, name: Any) -> Any:
    return name


def _open(open_rt: Open, *queues: Queue) -> SqliteRuntime:
    rt = open_rt()
    rt.register_workflow(gated)
    rt.register_workflow(quick)
    for queue in queues:
        rt.register_queue(queue)
    return rt


def _start(rt: SqliteRuntime, name: str, wf: str = "gated", **options: Any) -> Any:
    return rt.start_workflow_with_options(wf, name, StartOptions(**options)).exec_id


def _states(rt: SqliteRuntime, ids: list[Any]) -> list[str]:
    return [rt.describe(i).state for i in ids]


async def test_a_queue_runs_at_most_its_concurrency_and_admits_in_order(
    open_rt: Open,
) -> None:
    rt = _open(open_rt, Queue("q", concurrency=2))
    ids = [_start(rt, f"r{i}", queue="q") for i in range(4)]
    assert _states(rt, ids) == ["ENQUEUED"] * 4
    assert rt.outcome(ids[0]) == ExecutionOutcome.Enqueued(queue="q")
    await rt.run_until_idle()
    assert _states(rt, ids) == ["RUNNING", "RUNNING", "ENQUEUED", "ENQUEUED"]
    assert rt.counts_by_state()["ENQUEUED"] == 2
    page = rt.list_executions(ExecutionFilter().state("ENQUEUED"))
    assert sorted(s.exec_id for s in page.executions) == sorted(ids[2:])
    rt.send_signal(ids[0], "done", None)
    await rt.run_until_idle()
    assert _states(rt, ids) == ["COMPLETED", "RUNNING", "RUNNING", "ENQUEUED"]
    [info] = rt.queues()
    assert (info.name, info.concurrency, info.running, info.waiting) == ("q", 2, 2, 1)
    assert info.oldest_wait is not None


async def test_a_waiting_run_says_where_it_waits_and_which_limit_holds_it(
    open_rt: Open,
) -> None:
    rt = _open(open_rt, Queue("q", concurrency=1))
    ids = [_start(rt, f"r{i}", queue="q") for i in range(3)]
    await rt.run_until_idle()
    [wait] = rt.where_waiting(ids[2])
    assert (wait.kind, wait.name, wait.ahead, wait.held_by) == (
        "queue",
        "q",
        1,
        "concurrency",
    )
    assert "queue 'q'" in wait.describe()


async def test_priority_lower_first_then_arrival(open_rt: Open) -> None:
    rt = _open(open_rt, Queue("p", concurrency=1, priority=True))
    low = _start(rt, "low", queue="p", priority=5)
    high = _start(rt, "high", queue="p", priority=1)
    mid = _start(rt, "mid", queue="p", priority=1)
    await rt.run_until_idle()
    assert _states(rt, [high, mid, low]) == ["RUNNING", "ENQUEUED", "ENQUEUED"]
    rt.send_signal(high, "done", None)
    await rt.run_until_idle()
    assert _states(rt, [mid, low]) == ["RUNNING", "ENQUEUED"]


async def test_partitions_take_turns_each_under_its_own_limit(open_rt: Open) -> None:
    rt = _open(open_rt, Queue("part", concurrency=3, partition_concurrency=1))
    a = [_start(rt, f"a{i}", queue="part", partition_key="A") for i in range(3)]
    b = [_start(rt, f"b{i}", queue="part", partition_key="B") for i in range(2)]
    await rt.run_until_idle()
    running = [i for i in a + b if rt.describe(i).state == "RUNNING"]
    assert sorted(running) == sorted([a[0], b[0]])
    [wait] = rt.where_waiting(a[1])
    assert wait.held_by == "partition_concurrency"


async def test_a_dedup_id_is_refused_while_its_run_is_enqueued_or_running(
    open_rt: Open,
) -> None:
    rt = _open(open_rt, Queue("d", concurrency=1))
    first = _start(rt, "one", queue="d", dedup_id="job-7")
    with pytest.raises(DuplicateEnqueue) as caught:
        _start(rt, "two", queue="d", dedup_id="job-7")
    assert caught.value.exec_id == first  # type: ignore[attr-defined]
    await rt.run_until_idle()
    assert rt.describe(first).state == "RUNNING"
    with pytest.raises(DuplicateEnqueue):
        _start(rt, "three", queue="d", dedup_id="job-7")
    rt.send_signal(first, "done", None)
    await rt.run_until_idle()
    again = _start(rt, "four", queue="d", dedup_id="job-7")
    assert again != first
    assert rt.counts_by_state()["ENQUEUED"] + rt.counts_by_state()["RUNNING"] == 1


async def test_a_start_delay_waits_by_the_engine_clock(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = _open(open_rt, Queue("later"))
    run = _start(rt, "x", "quick", queue="later", start_delay="30s")
    await rt.run_until_idle()
    assert rt.describe(run).state == "ENQUEUED"
    [wait] = rt.where_waiting(run)
    assert wait.held_by == "start_delay"
    assert rt.next_wakeup() == wait.due_at
    clock.advance("30s")
    await rt.run_until_idle()
    assert rt.outcome(run) == ExecutionOutcome.Completed(output="x")


async def test_a_rate_of_ten_a_second_spaces_a_hundred_admissions_over_9_9s(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = _open(open_rt, Queue("r", rate=Rate(10, "1s")))
    began = clock.now()
    for i in range(100):
        _start(rt, f"r{i}", "quick", queue="r")
    admitted: list[Any] = []
    while len(admitted) < 100:
        await rt.poll_once()  # admits the due run, which completes in its decision
        done = rt.counts_by_state()["COMPLETED"]
        admitted += [clock.now()] * (done - len(admitted))
        due = rt.next_wakeup()
        if due is None:
            break
        clock.set(max(due, clock.now()))
    assert len(admitted) == 100
    assert (admitted[-1] - began).total_seconds() >= 9.9
    assert (admitted[-1] - began).total_seconds() < 10.0


async def test_changed_limits_apply_to_runs_already_waiting(open_rt: Open) -> None:
    rt = _open(open_rt, Queue("grow", concurrency=1))
    ids = [_start(rt, f"r{i}", queue="grow") for i in range(3)]
    await rt.run_until_idle()
    assert _states(rt, ids).count("RUNNING") == 1
    rt.register_queue(Queue("grow", concurrency=3))
    await rt.run_until_idle()
    assert _states(rt, ids) == ["RUNNING"] * 3


async def test_a_waiting_run_can_be_cancelled_and_frees_its_dedup_id(
    open_rt: Open,
) -> None:
    rt = _open(open_rt, Queue("c", concurrency=1))
    held = _start(rt, "a", queue="c")
    waiting = _start(rt, "b", queue="c", dedup_id="k")
    await rt.run_until_idle()
    rt.cancel(waiting, "not needed")
    assert rt.describe(waiting).state == "CANCELLED"
    _start(rt, "c", queue="c", dedup_id="k")
    rt.send_signal(held, "done", None)
    await rt.run_until_idle()
    assert rt.counts_by_state()["RUNNING"] == 1


def test_bad_queues_and_start_options_are_refused_and_write_nothing(
    open_rt: Open,
) -> None:
    rt = _open(open_rt, Queue("plain", concurrency=1))
    for bad in (
        lambda: Queue("x", concurrency=0),
        lambda: Queue("x", worker_concurrency=-1),
        lambda: Queue("x", partition_concurrency=0),
        lambda: Rate(0, "1s"),
        lambda: Rate(5, 0),
        lambda: Queue("x", rate=5),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidFlowOption):
            bad()
    with pytest.raises(UnknownQueue):
        _start(rt, "x", queue="nowhere")
    with pytest.raises(InvalidFlowOption):
        _start(rt, "x", queue="plain", priority=-1)
    with pytest.raises(InvalidFlowOption):
        _start(rt, "x", queue="plain", priority=2**31)
    with pytest.raises(InvalidFlowOption):  # the queue takes no priorities
        _start(rt, "x", queue="plain", priority=3)
    with pytest.raises(InvalidFlowOption):  # queue options without a queue
        _start(rt, "x", dedup_id="k")
    with pytest.raises(InvalidFlowOption):
        rt.register_queue(Queue("workflow:mine"))
    assert sum(rt.counts_by_state().values()) == 0


async def test_worker_concurrency_counts_the_runs_each_worker_admitted(
    open_rt: Open, store: str
) -> None:
    rt = _open(open_rt, Queue("each", worker_concurrency=1))
    ids = [_start(rt, f"r{i}", queue="each") for i in range(3)]
    await rt.run_until_idle()
    assert _states(rt, ids).count("RUNNING") == 1
    [wait] = rt.where_waiting(ids[2])
    assert wait.held_by == "worker_concurrency"
    if store == "postgres":  # a second worker admits its own one
        other = _open(open_rt)
        await other.run_until_idle()
        assert _states(rt, ids).count("RUNNING") == 2
