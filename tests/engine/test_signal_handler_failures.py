"""A signal handler's ApplicationError fails the run with its own type, whatever the body awaited before."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harvest_engine import (
    ActivityContext,
    ApplicationError,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowReplayer,
    activity,
    workflow,
)

Open = Callable[..., SqliteRuntime]


@activity
def warm_up(ctx: ActivityContext, _: Any) -> str:
    return "warm"


def refuse(_: Any) -> None:
    raise ApplicationError("handler failed", type="SignalFail", non_retryable=True)


@workflow
async def refuses_after_an_activity(ctx: WorkflowContext, _: Any) -> None:
    ctx.register_signal_handler("poke", refuse)
    await ctx.execute_activity(warm_up, None)
    await ctx.wait_for_signal("never")


async def refuse_later(_: Any) -> None:
    raise ApplicationError("handler failed", type="SignalFail", non_retryable=True)


@workflow
async def refuses_in_an_async_handler(ctx: WorkflowContext, _: Any) -> None:
    ctx.register_signal_handler("poke", refuse_later)
    await ctx.execute_activity(warm_up, None)
    await ctx.wait_for_signal("never")


@workflow
async def refuses_at_once(ctx: WorkflowContext, _: Any) -> None:
    ctx.register_signal_handler("poke", refuse)
    await ctx.wait_for_signal("never")


WORKFLOWS = (refuses_at_once, refuses_after_an_activity, refuses_in_an_async_handler)


@pytest.mark.parametrize("name", [wf.info.name for wf in WORKFLOWS])
async def test_a_handlers_application_error_fails_the_run_with_its_type(
    open_rt: Open, name: str
) -> None:
    rt = open_rt()
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    rt.register_activity(warm_up)
    exec_id = rt.start_workflow(name)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="never")

    rt.send_signal(exec_id, "poke", 1)
    state = await rt.run_until_blocked(exec_id)

    assert isinstance(state, RunState.Failed)
    assert (state.error.type, state.error.message) == ("SignalFail", "handler failed")
    assert state.error.non_retryable
    types = [e.type for e in rt.load_history(exec_id)]
    assert types[-2:] == ["SignalReceived", "WorkflowFailed"]
    assert "WorkflowPanicked" not in types
    replayed = WorkflowReplayer(WORKFLOWS).replay(rt.load_history(exec_id))
    assert replayed.closed
