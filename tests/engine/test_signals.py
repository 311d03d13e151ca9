"""Every signal API inside a workflow, fed by send_signal from outside."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from harvest_engine import (
    InvalidSignal,
    ManualClock,
    NonDeterminismDetected,
    PayloadTooDeep,
    PayloadTooLarge,
    RunState,
    SqliteRuntime,
    Stuck,
    WorkflowContext,
    WorkflowReplayer,
    workflow,
)
from harvest_engine.payloads import MAX_PAYLOAD_BYTES

Open = Callable[..., SqliteRuntime]


@dataclass
class Approval:
    by: str
    ok: bool


@workflow
async def blocking_waits(ctx: WorkflowContext, _: Any) -> list[Any]:
    first = await ctx.wait_for_signal("step")
    typed = await ctx.receive_signal("approval", Approval)
    assert isinstance(typed, Approval)
    return [first, typed.by, typed.ok]


@workflow
async def non_blocking(ctx: WorkflowContext, _: Any) -> dict[str, Any]:
    await ctx.wait_for_signal("go")
    return {
        "drained": ctx.drain_signals("item"),
        "one": ctx.try_receive_signal("other"),
        "none": ctx.try_receive_signal("missing"),
    }


@workflow
async def with_deadline(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal_timeout("answer", "1m")


@workflow
async def typed_deadline(ctx: WorkflowContext, _: Any) -> Any:
    value = await ctx.receive_signal_timeout("approval", 60, Approval)
    return None if value is None else value.by


@workflow
async def handler_counts(ctx: WorkflowContext, _: Any) -> int:
    total = {"n": 0}
    ctx.register_signal_handler(
        "add", lambda payload: total.__setitem__("n", total["n"] + payload)
    )
    await ctx.await_condition(lambda: total["n"] >= 10)
    return total["n"]


@workflow
async def parks_on_condition(ctx: WorkflowContext, _: Any) -> str:
    await ctx.await_condition(lambda: False)
    return "never"


@workflow
async def reads_at_once(ctx: WorkflowContext, _: Any) -> dict[str, Any]:
    """Reads without waiting on its first line, then waits for "go"."""
    early = {"notes": ctx.drain_signals("note"), "one": ctx.try_receive_signal("one")}
    await ctx.wait_for_signal("go")
    return {**early, "later": ctx.drain_signals("note")}


@pytest.fixture
def rt(open_rt: Open) -> SqliteRuntime:
    runtime = open_rt()
    for wf in (
        blocking_waits,
        non_blocking,
        with_deadline,
        typed_deadline,
        handler_counts,
        parks_on_condition,
        reads_at_once,
    ):
        runtime.register_workflow(wf)
    return runtime


async def test_signal_sent_before_wait_is_delivered_once(rt: SqliteRuntime) -> None:
    exec_id = rt.start_workflow("blocking_waits")
    rt.send_signal(exec_id, "step", 1)
    rt.send_signal(exec_id, "approval", {"by": "kim", "ok": True})
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output=[1, "kim", True]
    )
    received = [e for e in rt.load_history(exec_id) if e.type == "SignalReceived"]
    assert [e.attrs["name"] for e in received] == ["step", "approval"]
    assert rt.store.staged_signals(str(exec_id)) == []


async def test_signals_staged_before_the_first_drive_are_read_from_the_first_line(
    rt: SqliteRuntime,
) -> None:
    # Guide §8: each drive appends every staged signal before the workflow
    # runs, so the non-blocking reads see them too.
    exec_id = rt.start_workflow("reads_at_once")
    rt.send_signal(exec_id, "note", "a")
    rt.send_signal(exec_id, "one", 1)
    rt.send_signal(exec_id, "note", "b")
    rt.send_signal(exec_id, "go", None)

    state = await rt.run_until_blocked(exec_id)

    assert state == RunState.Completed(
        output={"notes": ["a", "b"], "one": 1, "later": []}
    )
    history = rt.load_history(exec_id)
    assert all(
        e.attrs.get("before_start") for e in history if e.type == "SignalReceived"
    )
    assert WorkflowReplayer([reads_at_once]).replay(history).closed


async def test_a_first_drive_that_recorded_nothing_still_lets_later_signals_in_first(
    open_rt: Open,
) -> None:
    rt = open_rt()
    rt.register_workflow(reads_at_once)
    exec_id = rt.start_workflow("reads_at_once")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="go")
    assert len(rt.load_history(exec_id)) == 1  # the park recorded nothing
    rt.send_signal(exec_id, "note", "a")
    rt.send_signal(exec_id, "go", None)

    state = await rt.run_until_blocked(exec_id)

    # The history is still WorkflowStarted alone, so this is the first drive
    # that counts: the body begins again after the signals, as replay will.
    assert state == RunState.Completed(
        output={"notes": ["a"], "one": None, "later": []}
    )
    assert WorkflowReplayer([reads_at_once]).replay(rt.load_history(exec_id)).closed


async def test_signals_after_the_body_began_reach_it_where_it_waits(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("blocking_waits")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="step")
    rt.send_signal(exec_id, "step", 1)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(
        name="approval"
    )
    rt.send_signal(exec_id, "approval", {"by": "kim", "ok": True})
    await rt.run_until_blocked(exec_id)

    history = rt.load_history(exec_id)
    received = [e for e in history if e.type == "SignalReceived"]
    assert [e.attrs.get("before_start") for e in received] == [True, None]
    assert WorkflowReplayer([blocking_waits]).replay(history).closed


def test_a_history_recorded_before_the_before_start_mark_still_replays() -> None:
    from tests.golden.regenerate import GOLDEN_DIR, decode
    from tests.golden.workflows import WORKFLOWS

    earlier = decode((GOLDEN_DIR / "earlier" / "signals_unmarked.json").read_text())
    assert not any(e.attrs.get("before_start") for e in earlier)
    assert WorkflowReplayer(WORKFLOWS).replay(earlier).closed


async def test_blocking_wait_reports_the_awaited_name(rt: SqliteRuntime) -> None:
    exec_id = rt.start_workflow("blocking_waits")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="step")
    rt.send_signal(exec_id, "step", "a")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(
        name="approval"
    )


async def test_drain_and_try_receive_read_buffered_signals_in_arrival_order(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("non_blocking")
    for i in range(3):
        rt.send_signal(exec_id, "item", i)
    rt.send_signal(exec_id, "other", "x")
    rt.send_signal(exec_id, "go", None)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(
        output={"drained": [0, 1, 2], "one": "x", "none": None}
    )


async def test_signal_before_the_deadline_wins_the_race(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    exec_id = rt.start_workflow("with_deadline")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="answer")
    clock.advance(30)
    rt.send_signal(exec_id, "answer", 42)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=42)
    assert rt.store.timers(str(exec_id)) == []


async def test_deadline_before_the_signal_returns_none(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    exec_id = rt.start_workflow("typed_deadline")
    await rt.run_until_blocked(exec_id)
    clock.advance(61)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=None)


async def test_arrival_time_decides_a_race_seen_in_one_drive(
    rt: SqliteRuntime, clock: ManualClock
) -> None:
    exec_id = rt.start_workflow("typed_deadline")
    await rt.run_until_blocked(exec_id)
    clock.advance(10)
    rt.send_signal(exec_id, "approval", {"by": "early", "ok": True})
    clock.advance(100)  # both the signal and the deadline are due in the next drive
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="early")


async def test_push_handler_with_await_condition(rt: SqliteRuntime) -> None:
    exec_id = rt.start_workflow("handler_counts")
    rt.send_signal(exec_id, "add", 4)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="add")
    rt.send_signal(exec_id, "add", 6)
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=10)


async def test_a_run_parked_on_a_condition_is_stuck_but_stays_running(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("parks_on_condition")
    with pytest.raises(Stuck):
        await rt.run_until_blocked(exec_id)
    assert rt.describe(exec_id).state == "RUNNING"


async def test_poll_once_reports_a_stuck_run_and_still_drives_the_others(
    rt: SqliteRuntime,
) -> None:
    stuck = rt.start_workflow("parks_on_condition")
    other = rt.start_workflow("non_blocking")
    rt.send_signal(other, "go", 1)
    with pytest.raises(Stuck) as caught:
        await rt.poll_once()
    assert caught.value.exec_id == stuck  # type: ignore[attr-defined]
    assert rt.describe(other).state == "COMPLETED"


@pytest.mark.parametrize("name", ["", "   ", None, 5])
def test_a_blank_signal_name_is_invalid_and_stages_nothing(
    rt: SqliteRuntime, name: Any
) -> None:
    exec_id = rt.start_workflow("blocking_waits")
    with pytest.raises(InvalidSignal):
        rt.send_signal(exec_id, name, 1)
    assert rt.store.staged_signals(str(exec_id)) == []


def test_signal_payloads_over_the_caps_are_refused_and_stage_nothing(
    rt: SqliteRuntime,
) -> None:
    exec_id = rt.start_workflow("blocking_waits")
    with pytest.raises(PayloadTooLarge):
        rt.send_signal(exec_id, "step", "x" * (MAX_PAYLOAD_BYTES + 1))
    deep: Any = 1
    for _ in range(150):
        deep = {"d": deep}
    with pytest.raises(PayloadTooDeep):
        rt.send_signal(exec_id, "step", deep)
    assert rt.store.staged_signals(str(exec_id)) == []


async def test_a_signal_handler_that_raises_is_a_panic_and_consumes_nothing(
    open_rt: Open,
) -> None:
    from harvest_engine import WorkflowPanicked

    @workflow
    async def fragile(ctx: WorkflowContext, _: Any) -> None:
        ctx.register_signal_handler("poke", lambda payload: 1 / payload)
        await ctx.wait_for_signal("never")

    rt = open_rt()
    rt.register_workflow(fragile)
    exec_id = rt.start_workflow("fragile")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="never")
    rt.send_signal(exec_id, "poke", 0)
    with pytest.raises(WorkflowPanicked) as caught:
        await rt.run_until_blocked(exec_id)
    assert isinstance(caught.value.__cause__, ZeroDivisionError)
    assert len(rt.store.staged_signals(str(exec_id))) == 1


@workflow
async def notes_the_time_first(ctx: WorkflowContext, _: Any) -> dict[str, Any]:
    """Reads the clock and the buffer on its first line, records, then waits."""
    first = {"at": ctx.now().isoformat(), "notes": ctx.drain_signals("note")}
    await ctx.side_effect(lambda: 0)
    await ctx.wait_for_signal("go")
    return first


@pytest.mark.parametrize("reopen", [False, True])
@pytest.mark.parametrize("staged", [[], ["a", "b"]])
async def test_the_first_line_sees_the_same_clock_live_and_on_replay_after_reopen(
    open_rt: Open, clock: ManualClock, *, reopen: bool, staged: list[str]
) -> None:
    # The body begins after the start (and any before_start signals); a
    # replay must begin it at that same point, not at the first later event,
    # or ctx.now() on its first line reads another time than the live drive.
    rt = open_rt()
    rt.register_workflow(notes_the_time_first)
    exec_id = rt.start_workflow("notes_the_time_first")
    for note in staged:
        rt.send_signal(exec_id, "note", note)
    clock.advance("10m")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="go")
    if reopen:
        rt.close()
        rt = open_rt()
        rt.register_workflow(notes_the_time_first)
    clock.advance("5m")
    rt.send_signal(exec_id, "go", None)

    state = await rt.run_until_blocked(exec_id)

    history = rt.load_history(exec_id)
    began = history[len(staged)].at  # WorkflowStarted, or the last staged signal
    assert state == RunState.Completed(
        output={"at": began.isoformat(), "notes": staged}
    )
    assert WorkflowReplayer([notes_the_time_first]).replay(history).closed


@workflow
async def reads_one_go(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("go")


@workflow
async def go_or_give_up(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal_timeout("go", "1m")


async def test_strict_replay_reports_a_signal_the_code_never_read(
    open_rt: Callable[..., SqliteRuntime],
) -> None:
    rt = open_rt()
    rt.register_workflow(reads_one_go)
    exec_id = rt.start_workflow("reads_one_go")
    rt.send_signal(exec_id, "go", 1)
    rt.send_signal(exec_id, "go", 2)

    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=1)

    history = rt.load_history(exec_id)
    assert [e.type for e in history].count("SignalReceived") == 2
    # Guide §8: the unread signal reaches history; strict replay calls it
    # an early completion.
    with pytest.raises(NonDeterminismDetected, match="early completion: signal 'go'"):
        WorkflowReplayer([reads_one_go]).replay(history)
    one_signal = [e for e in history if e.seq != 3]
    renumbered = [
        e.__class__(i + 1, e.type, e.at, e.attrs) for i, e in enumerate(one_signal)
    ]
    assert WorkflowReplayer([reads_one_go]).replay(renumbered).closed


async def test_a_signal_that_lost_a_deadline_race_is_exempt(
    open_rt: Callable[..., SqliteRuntime], clock: ManualClock
) -> None:
    rt = open_rt()
    rt.register_workflow(go_or_give_up)
    exec_id = rt.start_workflow("go_or_give_up")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="go")
    clock.advance("2m")
    rt.send_signal(exec_id, "go", "late")

    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=None)

    history = rt.load_history(exec_id)
    assert "SignalReceived" in [e.type for e in history]
    assert WorkflowReplayer([go_or_give_up]).replay(history).closed


@workflow
async def little_child(ctx: WorkflowContext, _: Any) -> str:
    return "child done"


@workflow
async def notes_in_tasks(ctx: WorkflowContext, _: Any) -> Any:
    notes: list[Any] = []

    async def note(payload: Any) -> None:
        notes.append(payload)

    def on_note(payload: Any) -> None:
        asyncio.create_task(note(payload))  # noqa: RUF006 - the loop keeps it

    ctx.register_signal_handler("note", on_note)
    child = await ctx.spawn_child_workflow(little_child, None)
    await ctx.wait_for_signal("end")
    return [child, notes]


async def test_a_task_a_sync_handler_creates_runs_on_the_engines_loop(
    open_rt: Callable[..., SqliteRuntime],
) -> None:
    rt = open_rt()
    rt.register_workflow(little_child)
    rt.register_workflow(notes_in_tasks)
    exec_id = rt.start_workflow("notes_in_tasks")
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="end")
    rt.send_signal(exec_id, "note", 1)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="end")
    rt.send_signal(exec_id, "end", None)

    done = await rt.run_until_blocked(exec_id)

    assert done == RunState.Completed(output=["child done", [1]])
    workflows = [little_child, notes_in_tasks]
    assert WorkflowReplayer(workflows).replay(rt.load_history(exec_id)).closed
