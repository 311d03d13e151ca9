"""The workflow of the determinism test: every way workflow code can interleave, in one run.

`choreography` uses asyncio.gather, tasks, ctx.wait, ctx.as_completed,
signals (blocking, buffered, drained, with a deadline, by handler), timers
(sleep, a cancelled handle), a retried activity, side_effect, ctx.random,
ctx.uuid4 and ctx.now. `drive` moves a ManualClock in fixed steps and sends
signals from a fixed script, so the whole run is a function of the code.
"""

from __future__ import annotations

import asyncio
from typing import Any

from harvest_engine import (
    ActivityContext,
    ManualClock,
    RetryPolicy,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)

# Sent when the run blocks on the named signal.
SIGNAL_SCRIPT: dict[str, Any] = {"go": {"speed": 3}}
# Staged before the first drive: they wait in the run's buffer.
EARLY_SIGNALS: list[tuple[str, Any]] = [
    ("extra", 1),
    ("note", "a"),
    ("extra", 2),
    ("note", "b"),
]
DRIVE_LIMIT = 1000


@activity
async def echo(ctx: ActivityContext, payload: Any) -> dict[str, Any]:
    """Return the input with this call's idempotency key."""
    return {"echo": payload, "key": ctx.idempotency_key()}


@activity(
    retry=RetryPolicy(max_attempts=3, initial_interval="2s", backoff_coefficient=2.0)
)
def flaky(ctx: ActivityContext, payload: Any) -> dict[str, Any]:
    """Fail the first two attempts, then succeed (in a worker thread)."""
    if ctx.info().attempt < 3:
        raise RuntimeError(f"attempt {ctx.info().attempt} fails")
    return {"flaky": payload, "attempt": ctx.info().attempt}


@workflow
async def choreography(ctx: WorkflowContext, payload: dict[str, Any]) -> dict[str, Any]:
    """Exercise every interleaving primitive; return a trace of what happened."""
    trace: dict[str, Any] = {"input": payload}
    notes: list[Any] = []
    ctx.register_signal_handler("note", notes.append)

    fanned = await asyncio.gather(*(ctx.execute_activity(echo, i) for i in range(3)))
    trace["gather"] = fanned

    race_timer = ctx.start_timer("race", "30s")
    contenders = [
        asyncio.ensure_future(race_timer.await_fire()),
        asyncio.ensure_future(ctx.execute_activity(echo, "race")),
    ]
    done, pending = await ctx.wait(contenders, return_when=asyncio.FIRST_COMPLETED)
    race_timer.cancel()
    trace["wait"] = {
        "done": [contenders.index(f) for f in done],
        "pending": [contenders.index(f) for f in pending],
    }

    async def after(seconds: int, label: str) -> str:
        await ctx.sleep(seconds)
        return label

    order = [
        await aw
        for aw in ctx.as_completed(
            [
                after(3, "3s"),
                after(1, "1s"),
                ctx.execute_activity(echo, "now"),
                after(2, "2s"),
            ]
        )
    ]
    trace["as_completed"] = order

    trace["go"] = await ctx.wait_for_signal("go")
    trace["extra"] = ctx.drain_signals("extra")
    trace["late"] = await ctx.wait_for_signal_timeout("late", "10s")
    trace["notes"] = list(notes)

    trace["flaky"] = await ctx.execute_activity(flaky, "x")
    trace["side_effect"] = await ctx.side_effect(lambda: {"computed": 42})
    trace["random"] = [ctx.random() for _ in range(3)]
    trace["uuid4"] = str(ctx.uuid4())
    trace["now"] = ctx.now().isoformat()

    tasks = [asyncio.ensure_future(after(1, f"task-{i}")) for i in range(3)]
    trace["tasks"] = [await t for t in reversed(tasks)]
    return trace


def register(rt: SqliteRuntime) -> None:
    """Register the workflow and its activities."""
    rt.register_workflow(choreography)
    rt.register_activity(echo)
    rt.register_activity(flaky)


async def drive(rt: SqliteRuntime, clock: ManualClock, exec_id: Any) -> RunState:
    """Run to the end: scripted signals when asked, else one clock second per block."""
    for name, value in EARLY_SIGNALS:
        rt.send_signal(exec_id, name, value)
    sent: set[str] = set()
    for _ in range(DRIVE_LIMIT):
        state = await rt.run_until_blocked(exec_id)
        if state.is_terminal:
            return state
        waiting_on = state.name if isinstance(state, RunState.WaitingSignal) else None
        if waiting_on in SIGNAL_SCRIPT and waiting_on not in sent:
            sent.add(waiting_on)
            rt.send_signal(exec_id, waiting_on, SIGNAL_SCRIPT[waiting_on])
            continue
        clock.advance("1s")
    raise RuntimeError(f"the run did not finish in {DRIVE_LIMIT} drives")
