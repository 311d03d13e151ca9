"""A drive appends every staged signal before the body goes on: drains and reads see them all.

Guide §8: each drive appends every staged signal to history before the
workflow runs, in arrival order, so the non-blocking reads see every one of
them, on a run's first drive and on every later one, live and on replay.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harvest_engine import (
    ManualClock,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowReplayer,
    workflow,
)
from harvest_engine.runtime.postgres_runtime import PostgresRuntime

if TYPE_CHECKING:
    from pathlib import Path

    from tests.stores import Databases

Open = Callable[..., SqliteRuntime]


@workflow
async def waits_then_drains(ctx: WorkflowContext, n: int) -> dict[str, Any]:
    got = [await ctx.wait_for_signal("item") for _ in range(n)]
    return {"got": got, "drained": ctx.drain_signals("item")}


@workflow
async def waits_then_tries(ctx: WorkflowContext, n: int) -> dict[str, Any]:
    got = [await ctx.wait_for_signal("item") for _ in range(n)]
    return {"got": got, "tried": [ctx.try_receive_signal("item") for _ in range(3)]}


@workflow
async def batches(ctx: WorkflowContext, seen: list[list[str]]) -> list[list[str]]:
    """Each wake-up takes one signal and drains the rest; "stop" ends, "roll" continues as new."""
    while True:
        batch = [await ctx.wait_for_signal("item"), *ctx.drain_signals("item")]
        seen = [*seen, batch]
        if "stop" in batch:
            return seen
        if "roll" in batch:
            ctx.continue_as_new(seen)


WORKFLOWS = (waits_then_drains, waits_then_tries, batches)


def prepared(rt: SqliteRuntime) -> SqliteRuntime:
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    return rt


async def test_a_drain_after_earlier_waits_returns_every_signal_the_drive_appended(
    open_rt: Open,
) -> None:
    rt = prepared(open_rt())
    exec_id = rt.start_workflow("waits_then_drains", 2)
    rt.send_signal(exec_id, "item", "early")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="item")
    for payload in ("late0", "late1", "late2"):
        rt.send_signal(exec_id, "item", payload)

    state = await rt.run_until_blocked(exec_id)

    assert state == RunState.Completed(
        output={"got": ["early", "late0"], "drained": ["late1", "late2"]}
    )
    WorkflowReplayer(WORKFLOWS).replay(rt.load_history(exec_id))


async def test_try_receive_after_earlier_waits_sees_every_signal_the_drive_appended(
    open_rt: Open,
) -> None:
    rt = prepared(open_rt())
    exec_id = rt.start_workflow("waits_then_tries", 2)
    rt.send_signal(exec_id, "item", "early")
    await rt.run_until_blocked(exec_id)
    for payload in ("late0", "late1", "late2"):
        rt.send_signal(exec_id, "item", payload)

    state = await rt.run_until_blocked(exec_id)

    assert state == RunState.Completed(
        output={"got": ["early", "late0"], "tried": ["late1", "late2", None]}
    )
    WorkflowReplayer(WORKFLOWS).replay(rt.load_history(exec_id))


async def test_drain_then_continue_as_new_loses_no_signal(open_rt: Open) -> None:
    rt = prepared(open_rt())
    first = rt.start_workflow("batches", [])
    rt.send_signal(first, "item", "a")
    await rt.run_until_blocked(first)
    for payload in ("b", "roll", "c"):
        rt.send_signal(first, "item", payload)
    await rt.run_until_blocked(first)
    successor = rt.describe(first).successor
    assert successor is not None
    rt.send_signal(successor, "item", "stop")

    state = await rt.run_until_blocked(successor)

    assert state == RunState.Completed(output=[["a"], ["b", "roll", "c"], ["stop"]])


def opener(databases: Databases, path: Path, clock: ManualClock) -> Open:
    """Open (or reopen) a runtime on the database of the test's store that stands for `path`."""

    def open_() -> SqliteRuntime:
        if databases.server is None:
            rt = SqliteRuntime.open(path, clock=clock)
        else:
            rt = PostgresRuntime.connect(databases.dsn(path), clock=clock)
        return prepared(rt)

    return open_


payload = st.sampled_from(["x", "y", "z", "roll"])


@pytest.mark.slow  # a fresh database per example
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    groups=st.lists(st.lists(payload, max_size=4), min_size=1, max_size=5),
    data=st.data(),
)
def test_every_wake_up_takes_exactly_the_signals_sent_since_the_last_drive(
    databases: Databases,
    tmp_path_factory: pytest.TempPathFactory,
    clock: ManualClock,
    groups: list[list[str]],
    data: st.DataObject,
) -> None:
    open_ = opener(databases, tmp_path_factory.mktemp("drains") / "run.db", clock)
    reopen_after = data.draw(st.integers(0, len(groups)), label="reopen_after")
    groups = [*groups, ["stop"]]

    async def scenario(rt: SqliteRuntime) -> SqliteRuntime:
        runs = [rt.start_workflow("batches", [])]
        for index, group in enumerate(groups):
            if index == reopen_after:  # a fresh process: every drive replays
                rt.close()
                rt = opened[0] = open_()
            for text in group:
                rt.send_signal(runs[-1], "item", text)
            await rt.run_until_blocked(runs[-1])
            successor = rt.describe(runs[-1]).successor
            if successor is not None:
                runs.append(successor)
        state = await rt.run_until_blocked(runs[-1])
        # Each drive appended its whole group before the body read: one
        # wake-up per non-empty group, taking exactly that group.
        assert state == RunState.Completed(output=[g for g in groups if g])
        replayer = WorkflowReplayer(WORKFLOWS)
        for run in runs:
            replayer.replay(rt.load_history(run))
        return rt

    opened = [open_()]
    try:
        asyncio.run(scenario(opened[0]))
    finally:
        opened[0].close()
