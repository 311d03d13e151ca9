"""Debounced and batched starts on both stores: one run per window, durable, woken by next_wakeup."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from harvest_engine import (
    Batch,
    ExecutionNotFound,
    ExecutionOutcome,
    ManualClock,
    SqliteRuntime,
    StartOptions,
    WorkflowContext,
    workflow,
)

Open = Callable[..., SqliteRuntime]


@workflow(debounce="10s")
async def settle(ctx: WorkflowContext, value: Any) -> Any:
    return value


@workflow(batch=Batch(max_size=3, max_wait="1m"))
async def gather(ctx: WorkflowContext, items: Any) -> Any:
    return items


def _open(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    rt.register_workflow(settle)
    rt.register_workflow(gather)
    return rt


async def test_debounce_collapses_starts_into_one_run_with_the_last_input(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = _open(open_rt)
    first = rt.start_workflow_with_id("settle", "doc-1", 1)
    clock.advance(timedelta(seconds=6))
    second = rt.start_workflow_with_id("settle", "doc-1", 2)
    assert second == first
    clock.advance(timedelta(seconds=6))  # 12 s after the first, 6 s after the last
    await rt.run_until_idle()
    with pytest.raises(ExecutionNotFound):
        rt.describe(first)  # still waiting: not a run yet
    [held] = rt.held_starts()
    assert (held.exec_id, held.kind, held.inputs) == (str(first), "debounce", 2)
    assert rt.next_wakeup() == held.due_at == clock.now() + timedelta(seconds=4)
    clock.advance(timedelta(seconds=4))
    await rt.run_until_idle()
    assert rt.outcome(first) == ExecutionOutcome.Completed(output=2)
    assert rt.describe(first).workflow_id == "doc-1"
    assert rt.held_starts() == []
    assert rt.next_wakeup() is None


async def test_debounce_keys_apart_and_a_later_start_opens_a_new_window(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = _open(open_rt)
    a = rt.start_workflow_with_options("settle", "a", StartOptions(workflow_id="a"))
    b = rt.start_workflow_with_options("settle", "b", StartOptions(workflow_id="b"))
    assert a.exec_id != b.exec_id
    assert a.started_fresh
    assert b.started_fresh
    again = rt.start_workflow_with_reuse_policy("settle", "a", "a2", "REJECT_DUPLICATE")
    assert again.exec_id == a.exec_id
    assert not again.started_fresh
    clock.advance(timedelta(seconds=10))
    await rt.run_until_idle()
    assert rt.outcome(a.exec_id) == ExecutionOutcome.Completed(output="a2")
    assert rt.outcome(b.exec_id) == ExecutionOutcome.Completed(output="b")
    later = rt.start_workflow_with_id("settle", "a", "a3")
    assert later != a.exec_id
    assert [h.exec_id for h in rt.held_starts()] == [str(later)]


async def test_batch_starts_at_max_size_with_the_inputs_in_arrival_order(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = _open(open_rt)
    ids = [rt.start_workflow("gather", n) for n in ("x", "y")]
    assert ids[0] == ids[1]
    assert rt.next_wakeup() == clock.now() + timedelta(minutes=1)
    third = rt.start_workflow("gather", {"z": 1})
    assert third == ids[0]
    assert rt.held_starts() == []  # full: the run started with the third start
    await rt.run_until_idle()
    assert rt.outcome(third) == ExecutionOutcome.Completed(output=["x", "y", {"z": 1}])
    fourth = rt.start_workflow("gather", "w")
    assert fourth != third


async def test_batch_starts_after_max_wait_with_what_arrived(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = _open(open_rt)
    exec_id = rt.start_workflow("gather", 1)
    clock.advance(timedelta(seconds=59))
    assert rt.start_workflow("gather", 2) == exec_id
    await rt.run_until_idle()
    assert rt.held_starts()[0].inputs == 2
    clock.advance(timedelta(seconds=1))
    await rt.run_until_idle()
    assert rt.outcome(exec_id) == ExecutionOutcome.Completed(output=[1, 2])


async def test_held_starts_survive_a_reopen(
    open_rt: Open, clock: ManualClock, db_path: Any
) -> None:
    rt = _open(open_rt)
    debounced = rt.start_workflow_with_id("settle", "k", "last")
    batched = [rt.start_workflow("gather", n) for n in (1, 2)]
    rt.close()
    clock.advance(timedelta(minutes=2))
    rt = _open(open_rt)
    assert {h.exec_id for h in rt.held_starts()} == {str(debounced), str(batched[0])}
    assert rt.next_wakeup() is not None
    assert rt.next_wakeup() <= clock.now()
    await rt.run_until_idle()
    assert rt.outcome(debounced) == ExecutionOutcome.Completed(output="last")
    assert rt.outcome(batched[0]) == ExecutionOutcome.Completed(output=[1, 2])
