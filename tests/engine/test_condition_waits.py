"""A run parked in await_condition on state its signal handlers set waits for a signal."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harvest_engine import RunState, SqliteRuntime, Stuck, WorkflowContext, workflow

Open = Callable[..., SqliteRuntime]


@workflow
async def approval(ctx: WorkflowContext, _: Any = None) -> str:
    verdict: dict[str, str] = {}
    ctx.register_signal_handler("reject", lambda why: verdict.update(v=f"no: {why}"))
    ctx.register_signal_handler("approve", lambda who: verdict.update(v=f"yes: {who}"))
    await ctx.await_condition(lambda: "v" in verdict)
    return verdict["v"]


@workflow
async def waits_on_nothing(ctx: WorkflowContext, _: Any = None) -> None:
    await ctx.await_condition(lambda: False)


def opened(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    rt.register_workflow(approval)
    rt.register_workflow(waits_on_nothing)
    return rt


async def test_a_condition_on_handler_state_reports_waiting_signal_with_the_handler_names(
    open_rt: Open,
) -> None:
    rt = opened(open_rt)
    exec_id = rt.start_workflow("approval")

    state = await rt.run_until_blocked(exec_id)

    assert state == RunState.WaitingSignal(name="approve", names=("approve", "reject"))
    assert not state.is_terminal


async def test_the_signal_moves_the_parked_condition_on_after_a_reopen(
    open_rt: Open,
) -> None:
    rt = opened(open_rt)
    exec_id = rt.start_workflow("approval")
    await rt.run_until_blocked(exec_id)
    rt.close()
    rt = opened(open_rt)
    assert isinstance(await rt.run_until_blocked(exec_id), RunState.WaitingSignal)

    rt.send_signal(exec_id, "reject", "too dear")

    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output="no: too dear"
    )


async def test_run_until_idle_leaves_a_run_waiting_on_handlers_alone(
    open_rt: Open,
) -> None:
    rt = opened(open_rt)
    rt.start_workflow("approval")

    await rt.run_until_idle()  # no Stuck

    assert rt.counts_by_state().get("RUNNING") == 1


async def test_a_condition_nothing_can_change_is_still_stuck(open_rt: Open) -> None:
    rt = opened(open_rt)
    exec_id = rt.start_workflow("waits_on_nothing")

    with pytest.raises(Stuck):
        await rt.run_until_blocked(exec_id)


def test_a_plain_signal_wait_names_its_one_signal() -> None:
    assert RunState.WaitingSignal(name="go").names == ("go",)
    assert RunState.WaitingSignal(name="go") == RunState.WaitingSignal(
        name="go", names=("go",)
    )


def test_a_plain_signal_wait_prints_as_it_always_did() -> None:
    assert (
        repr(RunState.WaitingSignal(name="go")) == "RunState.WaitingSignal(name='go')"
    )
    assert repr(RunState.WaitingSignal(name="a", names=("a", "b"))) == (
        "RunState.WaitingSignal(name='a', names=('a', 'b'))"
    )
