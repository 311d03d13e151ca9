"""Continue-as-new: one transaction seals the run and starts its successor (guide §7)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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
from harvest_engine.runtime.settings import Settings
from harvest_engine.workflow.defaults import CONTINUE_AS_NEW_ADVICE_EVENTS

if TYPE_CHECKING:
    from tests.stores import OpenReader

Open = Callable[..., SqliteRuntime]


@activity
async def poll(ctx: Any, n: int) -> int:
    return n


@workflow
async def poller(ctx: WorkflowContext, n: int) -> Any:
    await ctx.execute_activity(poll, n)
    if n >= 3:
        return f"stopped at {n}"
    ctx.continue_as_new(n + 1)


@workflow
async def inbox(ctx: WorkflowContext, seen: list[Any]) -> Any:
    got = await ctx.wait_for_signal("item")
    seen = [*seen, got]
    if got == "last":
        return seen
    ctx.continue_as_new(seen)


@workflow
async def leaves_work(ctx: WorkflowContext, n: int) -> Any:
    if n > 1:
        return "successor"
    ctx.start_timer("reminder", "1h")
    ctx.continue_as_new(n + 1)


@workflow
async def until_advised(ctx: WorkflowContext, n: int) -> Any:
    if n > 0:
        return ctx.info().predecessor
    while not ctx.should_continue_as_new():
        await ctx.side_effect(lambda: 1)
    ctx.continue_as_new(n + 1)


@workflow
async def advised_after_go(ctx: WorkflowContext, _: Any = None) -> int:
    await ctx.wait_for_signal("go")
    while not ctx.should_continue_as_new():
        await ctx.side_effect(lambda: 1)
    return ctx.history_length()


WORKFLOWS = [poller, inbox, leaves_work, until_advised, advised_after_go]


def runtime(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    rt.register_activity(poll)
    return rt


async def test_continue_as_new_seals_the_run_and_starts_a_successor_with_the_same_id(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    first = rt.start_workflow_with_id("poller", "poll-1", 1)

    state = await rt.run_until_blocked(first)

    assert isinstance(state, RunState.ContinuedAsNew)
    second = state.next
    assert rt.successor(first) == second
    assert rt.outcome(first) == ExecutionOutcome.Terminated(state="CONTINUED_AS_NEW")
    history = rt.load_history(first)
    assert history[-1].type == "WorkflowContinuedAsNew"
    assert history[-1].attrs["input"] == 2
    started = rt.load_history(second)[0]
    assert started.attrs["workflow_name"] == "poller"
    assert started.attrs["workflow_id"] == "poll-1"
    assert started.attrs["input"] == 2
    assert started.attrs["predecessor"] == str(first)
    assert WorkflowReplayer(WORKFLOWS).replay(history).closed


async def test_a_later_drive_of_the_old_run_returns_the_same_successor(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    first = rt.start_workflow("poller", 1)
    state = await rt.run_until_blocked(first)
    runs = sum(rt.counts_by_state().values())

    assert await rt.run_until_blocked(first) == state
    assert sum(rt.counts_by_state().values()) == runs


async def test_run_until_idle_drives_the_chain_and_a_start_attaches_to_the_newest(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    first = rt.start_workflow_with_id("poller", "poll-2", 1)
    await rt.run_until_blocked(first)
    second = rt.successor(first)
    assert second is not None
    assert rt.start_workflow_with_id("poller", "poll-2", 99) == second

    await rt.run_until_idle()

    third = rt.successor(second)
    assert third is not None
    assert rt.outcome(third) == ExecutionOutcome.Completed(output="stopped at 3")


async def test_pending_tasks_and_timers_of_the_old_run_are_deleted(
    open_rt: Open, db_path: Any, open_reader: OpenReader
) -> None:
    rt = runtime(open_rt)
    first = rt.start_workflow("leaves_work", 1)

    state = await rt.run_until_blocked(first)

    assert isinstance(state, RunState.ContinuedAsNew)
    with open_reader() as reader:
        assert reader.timers(str(first)) == []
        assert reader.pending_tasks(str(first)) == []


async def test_each_signal_arrives_exactly_once_across_the_chain(open_rt: Open) -> None:
    rt = runtime(open_rt)
    # Room for three signals in the hand-off decision: the fourth is backlog.
    rt.set_history_caps(HistoryCaps(max_events=4, max_bytes=None))
    exec_id = rt.start_workflow("inbox", [])
    for item in ("a", "b", "c", "last"):
        rt.send_signal(exec_id, "item", item)

    await rt.run_until_idle()

    chain = [exec_id]
    while (nxt := rt.successor(chain[-1])) is not None:
        chain.append(nxt)
    received = [
        e.attrs["payload"]
        for run in chain
        for e in rt.load_history(run)
        if e.type == "SignalReceived"
    ]
    assert received == [
        "a",
        "b",
        "c",
        "last",
    ]  # b and c stay with the old run, read or not
    assert len(chain) == 2
    assert rt.outcome(chain[-1]) == ExecutionOutcome.Completed(output=["a", "last"])


async def test_a_chain_continues_after_a_reopen_in_the_middle(open_rt: Open) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("inbox", [])
    rt.send_signal(exec_id, "item", "a")
    state = await rt.run_until_blocked(exec_id)
    assert isinstance(state, RunState.ContinuedAsNew)
    rt.close()

    reopened = runtime(open_rt)
    assert await reopened.run_until_blocked(state.next) == RunState.WaitingSignal(
        name="item"
    )
    reopened.send_signal(state.next, "item", "last")

    assert await reopened.run_until_blocked(state.next) == RunState.Completed(
        output=["a", "last"]
    )


async def test_should_continue_as_new_turns_true_at_ten_thousand_events(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    first = rt.start_workflow("until_advised", 0)

    state = await rt.run_until_blocked(first)

    assert isinstance(state, RunState.ContinuedAsNew)
    history = rt.load_history(first)
    assert (
        len(history) == CONTINUE_AS_NEW_ADVICE_EVENTS + 1
    )  # the advice, then the hand-off
    assert await rt.run_until_blocked(state.next) == RunState.Completed(
        output=str(first)
    )


async def test_a_lowered_event_cap_advises_at_four_fifths_of_it(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    rt.set_history_caps(HistoryCaps(max_events=50))
    first = rt.start_workflow("until_advised", 0)

    state = await rt.run_until_blocked(first)

    assert isinstance(state, RunState.ContinuedAsNew)
    history = rt.load_history(first)
    assert history[0].attrs["continue_as_new_at"] == 40
    assert len(history) == 40 + 1  # the advice, then the hand-off
    assert WorkflowReplayer(WORKFLOWS).replay(history).closed


async def test_a_run_keeps_the_advice_it_started_with_across_a_reopen(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    rt.set_history_caps(HistoryCaps(max_events=50))
    exec_id = rt.start_workflow("advised_after_go")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="go")
    rt.close()

    reopened = runtime(open_rt)  # the default caps: advice at 10,000
    reopened.send_signal(exec_id, "go")

    assert await reopened.run_until_blocked(exec_id) == RunState.Completed(output=40)


def test_caps_at_or_above_the_default_keep_the_default_advice() -> None:
    settings = Settings()
    settings.set_caps(HistoryCaps(max_events=12_500))
    assert settings.advice_at() is None
    settings.set_caps(HistoryCaps(max_events=None))
    assert settings.advice_at() is None
    settings.set_caps(HistoryCaps(max_events=12_499))
    assert settings.advice_at() == 9_999
