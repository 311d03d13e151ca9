"""History caps: a decision that reaches a cap rolls back and fails the run with a typed reason."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ExecutionOutcome,
    HistoryCaps,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowReplayer,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from tests.stores import OpenReader

Open = Callable[..., SqliteRuntime]


@activity
async def echo(ctx: Any, value: Any) -> Any:
    return value


@workflow
async def chatty(ctx: WorkflowContext, n: int) -> Any:
    for _ in range(n):
        await ctx.execute_activity(echo, "x" * 200)
    ctx.start_timer("never", "1d")
    return await ctx.wait_for_signal("stop")


@workflow
async def looper(ctx: WorkflowContext, n: int) -> Any:
    for i in range(3):
        await ctx.execute_activity(echo, i)
    if n < 2:
        ctx.continue_as_new(n + 1)
    return n


def runtime(open_rt: Open, caps: HistoryCaps) -> SqliteRuntime:
    rt = open_rt()
    rt.register_workflow(chatty)
    rt.register_workflow(looper)
    rt.register_activity(echo)
    rt.set_history_caps(caps)
    return rt


def test_the_default_caps_are_fifty_thousand_events_and_fifty_mib() -> None:
    assert HistoryCaps() == HistoryCaps(max_events=50_000, max_bytes=50 * 2**20)
    with pytest.raises(ValueError, match="max_events"):
        HistoryCaps(max_events=0)


async def test_a_decision_reaching_the_event_cap_fails_the_run_with_the_reason(
    open_rt: Open, db_path: Any, open_reader: OpenReader
) -> None:
    rt = runtime(open_rt, HistoryCaps(max_events=6, max_bytes=None))
    exec_id = rt.start_workflow("chatty", 5)
    rt.send_signal_idempotent(exec_id, "stop", None, "key-1")

    state = await rt.run_until_blocked(exec_id)

    assert isinstance(state, RunState.Failed)
    assert state.error.type == "HistoryCapReached"
    reason = json.loads(state.error.message)
    assert reason["cap"] == "max_events"
    assert reason["limit"] == 6
    history = rt.load_history(exec_id)
    # The decision that would have written event 7 rolled back; the seal wrote it instead.
    assert [e.type for e in history][-2:] == ["ActivityCompleted", "WorkflowFailed"]
    assert reason["value"] >= 6
    assert history[-1].type == "WorkflowFailed"
    assert json.loads(history[-1].attrs["error"]["message"]) == reason
    assert isinstance(rt.outcome(exec_id), ExecutionOutcome.Failed)
    with open_reader() as reader:
        assert reader.pending_tasks(str(exec_id)) == []
        assert reader.timers(str(exec_id)) == []
    assert (
        rt.send_signal_idempotent(exec_id, "stop", None, "key-1") is False
    )  # the key stays
    assert WorkflowReplayer([chatty]).replay(history).closed


async def test_the_byte_cap_counts_the_stored_event_json(open_rt: Open) -> None:
    rt = runtime(open_rt, HistoryCaps(max_events=None, max_bytes=1_000))
    exec_id = rt.start_workflow("chatty", 20)

    state = await rt.run_until_blocked(exec_id)

    assert isinstance(state, RunState.Failed)
    assert json.loads(state.error.message)["cap"] == "max_bytes"


@pytest.mark.parametrize(
    "bad", [{"max_events": True}, {"max_bytes": 0}, {"max_events": "10"}]
)
def test_a_cap_that_is_not_a_positive_int_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be a positive int or None"):
        HistoryCaps(**bad)


async def test_set_history_caps_refuses_anything_but_history_caps(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt, HistoryCaps(max_events=None, max_bytes=None))

    with pytest.raises(TypeError, match="takes a HistoryCaps"):
        rt.set_history_caps({"max_events": 3})  # type: ignore[arg-type]

    exec_id = rt.start_workflow("chatty", 5)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="stop")


async def test_none_removes_a_cap(open_rt: Open) -> None:
    rt = runtime(open_rt, HistoryCaps(max_events=None, max_bytes=None))
    exec_id = rt.start_workflow("chatty", 5)

    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="stop")


async def test_a_continuing_run_is_exempt_because_its_successor_starts_fresh(
    open_rt: Open,
) -> None:
    # Each run writes 8 events, the hand-off's decision makes the 9th.
    rt = runtime(open_rt, HistoryCaps(max_events=9, max_bytes=None))
    exec_id = rt.start_workflow("looper", 0)

    await rt.run_until_idle()

    last = exec_id
    while (nxt := rt.successor(last)) is not None:
        last = nxt
    assert rt.outcome(last) == ExecutionOutcome.Completed(output=2)
