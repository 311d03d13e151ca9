"""`should_continue_as_new()` follows a lowered byte cap too, so a loop hands over before the cap fails it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harvest_engine import (
    ActivityContext,
    HistoryCaps,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowReplayer,
    activity,
    workflow,
)
from harvest_engine.payloads import dumps
from harvest_engine.runtime.settings import Settings

Open = Callable[..., SqliteRuntime]
CAP = 16 * 1024


@activity
def blob(ctx: ActivityContext, size: int) -> str:
    return "x" * size


@workflow
async def checks_before_every_step(ctx: WorkflowContext, steps: int) -> int:
    """The issue's loop: check the advice, then one step with a 400-byte result."""
    while True:
        if ctx.should_continue_as_new():
            ctx.continue_as_new(steps)
        await ctx.execute_activity(blob, 400)
        steps += 1


@workflow
async def advised_after_go(ctx: WorkflowContext, _: Any = None) -> int:
    await ctx.wait_for_signal("go")
    while not ctx.should_continue_as_new():
        await ctx.execute_activity(blob, 400)
    return ctx.history_length()


WORKFLOWS = [checks_before_every_step, advised_after_go]


def runtime(open_rt: Open, caps: HistoryCaps | None) -> SqliteRuntime:
    rt = open_rt()
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    rt.register_activity(blob)
    if caps is not None:
        rt.set_history_caps(caps)
    return rt


def stored_bytes(rt: SqliteRuntime, exec_id: Any) -> int:
    """What the byte cap counts: the stored JSON of every event's attributes."""
    return sum(len(dumps(e.attrs)) for e in rt.load_history(exec_id))


@pytest.mark.parametrize("max_events", [None, 50_000])
async def test_a_loop_checking_the_advice_hands_over_before_a_lowered_byte_cap(
    open_rt: Open, max_events: int | None
) -> None:
    rt = runtime(open_rt, HistoryCaps(max_events=max_events, max_bytes=CAP))
    first = rt.start_workflow("checks_before_every_step", 0)

    state = await rt.run_until_blocked(first)

    assert isinstance(state, RunState.ContinuedAsNew), state
    history = rt.load_history(first)
    assert history[0].attrs["continue_as_new_bytes"] == CAP * 4 // 5
    # Handed over once four fifths of the cap were stored: the last step
    # still had a fifth of the cap to fit in.
    assert CAP * 4 // 5 <= stored_bytes(rt, first) < CAP
    assert WorkflowReplayer(WORKFLOWS).replay(history).closed
    # The successor follows the same advice, and hands over in turn.
    second = await rt.run_until_blocked(state.next)
    assert isinstance(second, RunState.ContinuedAsNew), second
    assert rt.load_history(state.next)[0].attrs["continue_as_new_bytes"] == (
        CAP * 4 // 5
    )


async def test_the_default_caps_record_no_byte_advice(open_rt: Open) -> None:
    rt = runtime(open_rt, None)
    exec_id = rt.start_workflow("advised_after_go")
    await rt.run_until_blocked(exec_id)
    assert "continue_as_new_bytes" not in rt.load_history(exec_id)[0].attrs


async def test_a_run_keeps_the_byte_advice_it_started_with_across_a_reopen(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt, HistoryCaps(max_events=None, max_bytes=CAP))
    exec_id = rt.start_workflow("advised_after_go")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="go")
    rt.close()

    reopened = runtime(open_rt, None)  # the default caps: no byte advice
    reopened.send_signal(exec_id, "go")

    state = await reopened.run_until_blocked(exec_id)
    assert isinstance(state, RunState.Completed), state
    assert CAP * 4 // 5 <= stored_bytes(reopened, exec_id) < CAP


def test_byte_advice_is_four_fifths_of_a_byte_cap_below_the_default() -> None:
    settings = Settings()
    assert settings.advice_bytes() is None
    settings.set_caps(HistoryCaps(max_bytes=None))
    assert settings.advice_bytes() is None
    settings.set_caps(HistoryCaps(max_bytes=50 * 2**20 - 1))
    assert settings.advice_bytes() == (50 * 2**20 - 1) * 4 // 5
    settings.set_caps(HistoryCaps(max_bytes=1))
    assert settings.advice_bytes() == 1
