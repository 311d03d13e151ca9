"""Replay: divergence is named, the replayer checks stored histories, and the instance cache is invisible."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harvest_engine import (
    ActivityContext,
    ManualClock,
    NonDeterminismDetected,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowReplayer,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from pathlib import Path


@activity
async def step(ctx: ActivityContext, n: Any) -> Any:
    return {"step": n}


@activity
async def other_step(ctx: ActivityContext, n: Any) -> Any:
    return n


@workflow(name="program")
async def program(ctx: WorkflowContext, steps: list[list[Any]]) -> list[Any]:
    """Interprets a list of steps, so property tests can generate workflows."""
    out: list[Any] = []
    for kind, arg in steps:
        if kind == "act":
            out.append(await ctx.execute_activity(step, arg))
        elif kind == "gather":
            out.append(
                list(
                    await asyncio.gather(
                        *(ctx.execute_activity(step, i) for i in range(arg))
                    )
                )
            )
        elif kind == "timer":
            await ctx.timer(arg)
            out.append(f"slept {arg}")
        elif kind == "signal":
            out.append(await ctx.wait_for_signal(arg))
        elif kind == "effect":
            out.append(await ctx.side_effect(lambda arg=arg: arg * 2))
    return out


async def drive_to_end(rt: SqliteRuntime, exec_id: Any, clock: ManualClock) -> RunState:
    for _ in range(200):
        state = await rt.run_until_blocked(exec_id)
        if isinstance(state, RunState.WaitingSignal):
            rt.send_signal(exec_id, state.name, f"got {state.name}")
        elif isinstance(state, RunState.WaitingTimer):
            clock.advance(60)
        else:
            return state
    raise AssertionError("run did not finish")


def registered(rt: SqliteRuntime, wf: Any = program) -> SqliteRuntime:
    rt.register_workflow(wf)
    rt.register_activity(step)
    rt.register_activity(other_step)
    return rt


async def test_a_changed_workflow_diverges_naming_recorded_and_expected(
    db_path: Path, clock: ManualClock
) -> None:
    with registered(SqliteRuntime.open(db_path, clock=clock)) as rt:
        exec_id = rt.start_workflow("program", [["act", 1], ["signal", "go"]])
        assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="go")

    @workflow(name="program")
    async def changed(ctx: WorkflowContext, steps: Any) -> Any:
        await ctx.execute_activity(other_step, 1)
        return await ctx.wait_for_signal("go")

    with registered(SqliteRuntime.open(db_path, clock=clock), changed) as rt:
        rt.send_signal(exec_id, "go", 1)
        with pytest.raises(NonDeterminismDetected) as caught:
            await rt.run_until_blocked(exec_id)
        message = str(caught.value)
        assert "ActivityScheduled(activity_id=1, name='step')" in message
        assert "ActivityScheduled(activity_id=1, name='other_step')" in message
        assert caught.value.seq == 2  # type: ignore[attr-defined]
        assert rt.describe(exec_id).state == "RUNNING"
        assert rt.store.staged_signals(str(exec_id)) != []  # nothing was consumed


async def test_the_replayer_accepts_a_stored_history_and_rejects_changed_code(
    open_rt: Any, clock: ManualClock
) -> None:
    rt = registered(open_rt())
    exec_id = rt.start_workflow("program", [["act", 1], ["timer", 5], ["effect", 4]])
    assert isinstance(await drive_to_end(rt, exec_id, clock), RunState.Completed)
    history = rt.load_history(exec_id)
    result = WorkflowReplayer([program]).replay(history)
    assert result.closed
    assert result.events == len(history)
    from harvest_engine.events import history_to_json

    assert WorkflowReplayer([program]).replay(history_to_json(history)).closed

    @workflow(name="program")
    async def shorter(ctx: WorkflowContext, steps: Any) -> Any:
        return await ctx.execute_activity(step, 1)

    with pytest.raises(NonDeterminismDetected):
        WorkflowReplayer([shorter]).replay(history)


async def test_a_run_of_k_activities_replays_once_thanks_to_the_cache(
    open_rt: Any, clock: ManualClock
) -> None:
    rt = registered(open_rt())
    k = 30
    exec_id = rt.start_workflow("program", [["act", i] for i in range(k)])
    loaded: list[int] = []
    original = rt.store.load_events

    def counting(exec_id: str, after_seq: int = 0) -> Any:
        events = original(exec_id, after_seq)
        loaded.append(len(events))
        return events

    rt.store.load_events = counting  # type: ignore[method-assign]
    await rt.run_until_blocked(exec_id)
    assert rt.cache.misses == 1
    assert rt.describe(exec_id).state == "COMPLETED"
    # Each stored event is read about once in total: O(K), not O(K^2).
    assert sum(loaded) <= len(rt.load_history(exec_id))


async def normalised_history(
    path: Path, steps: list[list[Any]], *, cache: bool, reopen_after: int | None
) -> list[str]:
    clock = ManualClock()
    rt = registered(SqliteRuntime.open(path, clock=clock))
    if not cache:
        rt.cache.capacity = 0
    exec_id = rt.start_workflow("program", steps)
    drives = 0
    while True:
        if reopen_after is not None and drives == reopen_after:
            rt.close()
            rt = registered(SqliteRuntime.open(path, clock=clock))
        state = await rt.run_until_blocked(exec_id)
        drives += 1
        if isinstance(state, RunState.WaitingSignal):
            rt.send_signal(exec_id, state.name, f"got {state.name}")
        elif isinstance(state, RunState.WaitingTimer):
            clock.advance(60)
        else:
            break
    history = [
        e.to_json().replace(str(exec_id), "EXEC") for e in rt.load_history(exec_id)
    ]
    rt.close()
    return history


step_strategy = st.one_of(
    st.tuples(st.just("act"), st.integers(0, 9)),
    st.tuples(st.just("gather"), st.integers(1, 3)),
    st.tuples(st.just("timer"), st.integers(1, 120)),
    st.tuples(st.just("signal"), st.sampled_from(["a", "b"])),
    st.tuples(st.just("effect"), st.integers(0, 5)),
).map(list)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(step_strategy, max_size=6), reopen=st.integers(0, 6))
def test_history_is_the_same_with_the_cache_on_off_and_after_a_reopen(
    tmp_path_factory: pytest.TempPathFactory, steps: list[list[Any]], reopen: int
) -> None:
    base = tmp_path_factory.mktemp("prop")
    cached = asyncio.run(
        normalised_history(base / "a.db", steps, cache=True, reopen_after=None)
    )
    uncached = asyncio.run(
        normalised_history(base / "b.db", steps, cache=False, reopen_after=None)
    )
    reopened = asyncio.run(
        normalised_history(base / "c.db", steps, cache=True, reopen_after=reopen)
    )
    assert cached == uncached == reopened
    assert cached[-1].find("WorkflowCompleted") >= 0


async def test_the_replayer_answers_a_query_as_of_any_prefix_of_the_history(
    open_rt: Any, clock: ManualClock
) -> None:
    from harvest_engine import QueryNotFound

    @workflow(name="stages")
    async def stages(ctx: WorkflowContext, _: Any) -> str:
        stage = {"now": "reserving"}
        ctx.register_query("stage", lambda: stage["now"])
        await ctx.execute_activity(step, 1)
        stage["now"] = "waiting"
        await ctx.wait_for_signal("go")
        stage["now"] = "done"
        return "ok"

    rt = open_rt()
    rt.register_workflow(stages)
    rt.register_activity(step)
    exec_id = rt.start_workflow("stages")
    await drive_to_end(rt, exec_id, clock)
    history = rt.load_history(exec_id)
    replayer = WorkflowReplayer([stages])
    assert replayer.query(history[:1], "stage") == "reserving"
    completed_at = next(
        i for i, e in enumerate(history) if e.type == "ActivityCompleted"
    )
    assert replayer.query(history[: completed_at + 1], "stage") == "waiting"
    assert replayer.query(history, "stage") == "done"
    with pytest.raises(QueryNotFound):
        replayer.query(history, "nope")
