"""Circuit breakers on both stores: open after N failures in the window, fail fast, one probe."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from harvest_engine import (
    ActivityContext,
    CircuitBreaker,
    CircuitOpen,
    ExecutionOutcome,
    InvalidFlowOption,
    ManualClock,
    RetryPolicy,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)

Open = Callable[..., SqliteRuntime]

BROKEN = {"on": True, "calls": 0}


@activity(
    retry=RetryPolicy(max_attempts=20, initial_interval=1, backoff_coefficient=1),
    circuit_breaker=CircuitBreaker(failures=2, window="1m", cooldown="30s"),
)
def call_model(ctx: ActivityContext, prompt: str) -> str:
    BROKEN["calls"] += 1
    if BROKEN["on"]:
        raise RuntimeError("model API down")
    return prompt.upper()


@workflow
async def ask(ctx: WorkflowContext, prompt: str) -> str:
    return str(await ctx.execute_activity(call_model, prompt))


@pytest.fixture(autouse=True)
def _reset() -> None:
    BROKEN.update(on=True, calls=0)


def _open(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    rt.register_workflow(ask)
    rt.register_activity(call_model)
    return rt


async def _step(rt: SqliteRuntime, clock: ManualClock, seconds: float) -> None:
    clock.advance(timedelta(seconds=seconds))
    await rt.run_until_idle()


async def test_breaker_opens_fails_fast_then_one_probe_closes_it(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = _open(open_rt)
    exec_id = rt.start_workflow("ask", "hi")
    await rt.run_until_idle()  # attempt 1 fails
    await _step(rt, clock, 1)  # attempt 2 fails: two failures in the window
    assert BROKEN["calls"] == 2
    [breaker] = rt.circuit_breakers()
    assert (breaker.activity, breaker.state) == ("call_model", "OPEN")
    opened_until = breaker.open_until
    assert opened_until == clock.now() + timedelta(seconds=30)
    await _step(rt, clock, 1)  # attempt 3: refused, the body does not run
    assert BROKEN["calls"] == 2
    attempts = rt.activity_attempts(exec_id)
    assert [a.outcome for a in attempts] == ["FAILED"] * 3
    assert attempts[-1].error is not None
    assert attempts[-1].error.type == CircuitOpen.__name__
    # The refused attempt's retry waits for the cooldown: nothing to do until then.
    assert rt.next_wakeup() == opened_until
    await _step(rt, clock, 10)
    assert len(rt.activity_attempts(exec_id)) == 3
    BROKEN["on"] = False
    clock.advance(opened_until - clock.now())
    assert rt.circuit_breakers()[0].state == "HALF_OPEN"
    await rt.run_until_idle()  # the probe runs and succeeds
    assert BROKEN["calls"] == 3
    assert rt.outcome(exec_id) == ExecutionOutcome.Completed(output="HI")
    [closed] = rt.circuit_breakers()
    assert (closed.state, closed.recent_failures, closed.open_until) == (
        "CLOSED",
        0,
        None,
    )


async def test_a_failed_probe_reopens_and_other_attempts_wait(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = _open(open_rt)
    first = rt.start_workflow("ask", "a")
    await rt.run_until_idle()
    await _step(rt, clock, 1)  # open until +31 s
    second = rt.start_workflow("ask", "b")
    await rt.run_until_idle()  # refused at once
    assert BROKEN["calls"] == 2
    await _step(rt, clock, 30)  # cooldown over: one probe, which fails
    assert BROKEN["calls"] == 3
    [breaker] = rt.circuit_breakers()
    assert breaker.state == "OPEN"
    assert breaker.open_until == clock.now() + timedelta(seconds=30)
    BROKEN["on"] = False
    await _step(rt, clock, 30)  # one probe again (it succeeds); the other attempt
    assert BROKEN["calls"] == 4  # is refused while it runs and waits a cooldown
    assert rt.outcome(first) == ExecutionOutcome.Completed(output="A")
    assert rt.outcome(second) == ExecutionOutcome.Running()
    assert rt.circuit_breakers()[0].state == "CLOSED"
    await _step(rt, clock, 30)
    assert rt.outcome(second) == ExecutionOutcome.Completed(output="B")


async def test_failures_outside_the_window_do_not_open_it(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = _open(open_rt)
    exec_id = rt.start_workflow("ask", "x")
    await rt.run_until_idle()  # failure at 0 s
    # Attempts 1 s apart would open it; this one waits past the window first.
    rt.close()
    clock.advance(timedelta(minutes=2))
    rt = _open(open_rt)
    BROKEN["on"] = True
    await rt.run_until_idle()  # the retry fails 2 min later: one failure in the window
    assert rt.circuit_breakers()[0].state == "CLOSED"
    assert rt.circuit_breakers()[0].recent_failures == 1
    BROKEN["on"] = False
    await _step(rt, clock, 1)
    assert rt.outcome(exec_id) == ExecutionOutcome.Completed(output="X")


async def test_an_open_breaker_survives_a_reopen(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = _open(open_rt)
    rt.start_workflow("ask", "x")
    await rt.run_until_idle()
    await _step(rt, clock, 1)
    rt.close()
    rt = _open(open_rt)
    assert rt.circuit_breakers()[0].state == "OPEN"
    await _step(rt, clock, 1)
    assert BROKEN["calls"] == 2  # still failing fast after the reopen


@pytest.mark.parametrize(
    "make",
    [
        lambda: CircuitBreaker(0, "1m", "1s"),
        lambda: CircuitBreaker(3, 0, "1s"),
        lambda: CircuitBreaker(3, "1m", "0s"),
        lambda: CircuitBreaker(3, "1m", "soon"),
    ],
)
def test_bad_breaker_values_are_typed_errors(make: Callable[[], Any]) -> None:
    with pytest.raises(InvalidFlowOption):
        make()


def test_a_breaker_that_is_not_a_circuit_breaker_is_refused_at_registration() -> None:
    @activity(circuit_breaker=(3, "1m", "1s"))
    def odd(ctx: ActivityContext, _: Any) -> None:
        return None

    with SqliteRuntime.open_in_memory() as rt:
        with pytest.raises(InvalidFlowOption, match="circuit_breaker"):
            rt.register_activity(odd)
        assert "odd" not in rt.registry.activities
