"""Where a running run waits and where its coroutines stand: rt.where_waiting / rt.stack and the replayer's."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ExecutionNotFound,
    HarvestError,
    ManualClock,
    RunState,
    RunWait,
    SqliteRuntime,
    StackFrame,
    UnknownWorkflow,
    WorkflowContext,
    WorkflowReplayer,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from tests.stores import OpenReader

Open = Callable[..., SqliteRuntime]
HERE = __file__


@dataclass
class Approval:
    by: str


@activity
async def ship(ctx: Any, order: str) -> str:
    return f"shipped {order}"


@workflow
async def approval(ctx: WorkflowContext, order: str) -> Any:
    decision = await ctx.receive_signal("approve", Approval)  # waits: approve
    return decision.by


@workflow
async def untyped(ctx: WorkflowContext) -> Any:
    return await ctx.wait_for_signal("go")


@workflow
async def sleeper(ctx: WorkflowContext) -> Any:
    await ctx.sleep("10m")  # waits: timer


async def _leg(ctx: WorkflowContext, name: str) -> Any:
    return await ctx.wait_for_signal(name)  # waits: leg


@workflow
async def fan(ctx: WorkflowContext) -> Any:
    return await asyncio.gather(_leg(ctx, "left"), _leg(ctx, "right"))


@workflow
async def conditional(ctx: WorkflowContext) -> Any:
    seen: list[Any] = []

    def on_item(item: Approval) -> None:
        seen.append(item)

    ctx.register_signal_handler("item", on_item)
    await ctx.await_condition(lambda: len(seen) >= 2)  # waits: condition
    return len(seen)


@workflow
async def child_flow(ctx: WorkflowContext) -> Any:
    return await ctx.wait_for_signal("done")


@workflow
async def parent_flow(ctx: WorkflowContext) -> Any:
    return await ctx.spawn_child_workflow(child_flow)  # waits: child


@workflow
async def shipper(ctx: WorkflowContext, order: str) -> Any:
    return await ctx.execute_activity(ship, order)


@workflow
async def locker(ctx: WorkflowContext) -> Any:
    async with ctx.mutex("printer"):  # waits: mutex
        await ctx.wait_for_signal("go")


def _share(total: int, parts: int) -> int:
    return total // parts  # raises: ZeroDivisionError


@workflow
async def broken(ctx: WorkflowContext) -> Any:
    return _share(10, 0)


WORKFLOWS = [
    approval,
    untyped,
    sleeper,
    fan,
    conditional,
    child_flow,
    parent_flow,
    shipper,
    locker,
    broken,
]


def runtime(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    rt.register_activity(ship)
    return rt


def line_of(marker: str) -> int:
    with open(HERE, encoding="utf-8") as f:
        for number, text in enumerate(f, start=1):
            if text.rstrip().endswith(f"# {marker}"):
                return number
    raise AssertionError(marker)


async def test_a_signal_wait_names_the_signal_its_payload_type_and_the_waiting_line(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    run = rt.start_workflow("approval", "ORD-1")
    await rt.run_until_blocked(run)

    (wait,) = rt.where_waiting(run)

    assert (wait.kind, wait.name, wait.payload_type) == (
        "signal",
        "approve",
        "Approval",
    )
    assert wait.where is not None
    assert wait.where.file == HERE
    assert wait.where.line == line_of("waits: approve")
    assert wait.where.function == "approval"
    assert "receive_signal" in wait.where.source
    assert wait.describe() == "signal 'approve', payload Approval"


async def test_an_unannotated_signal_wait_has_no_payload_type(open_rt: Open) -> None:
    rt = runtime(open_rt)
    run = rt.start_workflow("untyped")
    await rt.run_until_blocked(run)

    assert [(w.kind, w.name, w.payload_type) for w in rt.where_waiting(run)] == [
        ("signal", "go", None)
    ]


async def test_a_timer_wait_has_the_due_time_of_its_row(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    run = rt.start_workflow("sleeper")
    await rt.run_until_blocked(run)

    (wait,) = rt.where_waiting(run)

    assert wait.kind == "timer"
    assert wait.due_at == clock.now() + timedelta(minutes=10)
    assert wait.where is not None
    assert wait.where.line == line_of("waits: timer")


async def test_gathered_coroutines_each_show_their_stack_in_the_users_code(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    run = rt.start_workflow("fan")
    await rt.run_until_blocked(run)

    stacks = rt.stack(run)

    assert stacks[0].task == "workflow fan"
    assert stacks[0].awaiting == "asyncio.gather"
    assert [f.function for f in stacks[0].frames] == ["fan"]
    legs = stacks[1:]
    assert len(legs) == 2
    for leg in legs:
        assert [f.function for f in leg.frames] == ["_leg"]
        assert leg.frames[0] == StackFrame(
            file=HERE,
            line=line_of("waits: leg"),
            function="_leg",
            source="return await ctx.wait_for_signal(name)  # waits: leg",
        )
        assert leg.awaiting == "WorkflowContext.wait_for_signal"
    assert sorted(w.name for w in rt.where_waiting(run)) == ["left", "right"]


async def test_a_condition_wait_shows_its_predicate_and_the_handler_that_feeds_it(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    run = rt.start_workflow("conditional")
    # Nothing but a signal (to the handler) can move it.
    assert await rt.run_until_blocked(run) == RunState.WaitingSignal(name="item")

    waits = {w.kind: w for w in rt.where_waiting(run)}

    assert waits["condition"].name == "lambda: len(seen) >= 2"
    assert waits["condition"].where is not None
    assert waits["condition"].where.line == line_of("waits: condition")
    assert waits["signal handler"].name == "item"
    assert waits["signal handler"].payload_type == "Approval"


async def test_a_parent_waits_on_its_child_run_by_exec_id(open_rt: Open) -> None:
    rt = runtime(open_rt)
    parent = rt.start_workflow("parent_flow")
    await rt.run_until_blocked(parent)
    child = next(
        e.attrs["child"]
        for e in rt.load_history(parent)
        if e.type == "ChildWorkflowStarted"
    )

    (wait,) = rt.where_waiting(parent)

    assert (wait.kind, wait.target) == ("child", child)
    assert wait.where is not None
    assert wait.where.line == line_of("waits: child")
    assert [w.name for w in rt.where_waiting(child)] == ["done"]


async def test_an_activity_wait_is_named_after_the_activity(open_rt: Open) -> None:
    rt = runtime(open_rt)
    run = rt.start_workflow("shipper", "ORD-2")
    await rt.run_until_blocked(run)
    history = rt.load_history(run)
    scheduled = next(e.seq for e in history if e.type == "ActivityScheduled")

    # As the run stood before the task ran (the store only has it done now).
    (wait,) = WorkflowReplayer(WORKFLOWS).where_waiting(history[:scheduled])

    assert (wait.kind, wait.name) == ("activity", "ship")
    assert wait.where is not None
    assert wait.where.function == "shipper"


async def test_a_mutex_waiter_knows_how_many_runs_are_ahead(
    open_rt: Open, open_reader: OpenReader
) -> None:
    rt = runtime(open_rt)
    runs = [rt.start_workflow("locker") for _ in range(3)]
    for run in runs:
        await rt.run_until_blocked(run)

    assert [w.kind for w in rt.where_waiting(runs[0])] == ["signal"]
    for place, run in enumerate(runs[1:], start=1):
        (wait,) = rt.where_waiting(run)
        assert (wait.kind, wait.name, wait.ahead) == ("mutex", "printer", place)
        assert wait.where is not None
        assert wait.where.line == line_of("waits: mutex")
    with open_reader() as reader:
        assert [m.ahead for m in reader.mutexes(str(runs[0]))] == [0]
        assert [m.ahead for m in reader.mutexes(str(runs[2]))] == [2]


async def test_an_ended_run_waits_on_nothing(open_rt: Open) -> None:
    rt = runtime(open_rt)
    run = rt.start_workflow("untyped")
    await rt.run_until_blocked(run)
    rt.send_signal(run, "go", 1)
    await rt.run_until_blocked(run)

    assert rt.where_waiting(run) == ()
    assert rt.stack(run) == ()


async def test_a_panicking_body_shows_its_traceback_into_the_users_code(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    run = rt.start_workflow("broken")
    with pytest.raises(HarvestError):
        await rt.run_until_blocked(run)

    (raised,) = rt.stack(run)

    assert raised.awaiting.startswith("nothing: it raised ZeroDivisionError")
    assert raised.error == "ZeroDivisionError: integer division or modulo by zero"
    assert [f.function for f in raised.frames] == ["broken", "_share"]
    assert raised.frames[-1].line == line_of("raises: ZeroDivisionError")
    assert rt.where_waiting(run) == ()


async def test_the_replayer_answers_from_a_history_without_the_store(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    run = rt.start_workflow("approval", "ORD-3")
    await rt.run_until_blocked(run)
    history = rt.load_history(run)
    replayer = WorkflowReplayer(WORKFLOWS)

    assert replayer.where_waiting(history) == rt.where_waiting(run)
    assert replayer.stack(history) == rt.stack(run)
    rt.send_signal(run, "approve", {"by": "ada"})
    await rt.run_until_blocked(run)
    assert replayer.where_waiting(rt.load_history(run)) == ()


async def test_reading_without_the_code_or_the_run_is_a_typed_error(
    open_rt: Open, db_path: Any
) -> None:
    rt = runtime(open_rt)
    run = rt.start_workflow("untyped")
    await rt.run_until_blocked(run)
    rt.close()
    bare = open_rt()

    with pytest.raises(UnknownWorkflow):
        bare.where_waiting(run)
    with pytest.raises(UnknownWorkflow):
        bare.stack(run)
    with pytest.raises(ExecutionNotFound):
        bare.where_waiting("no-such-run")


def test_a_wait_describes_itself_in_one_line() -> None:
    assert RunWait("mutex", "k", ahead=0).describe() == "mutex 'k' (held by this run)"
    assert RunWait("mutex", "k", ahead=2).describe() == "mutex 'k', 2 runs ahead"
    assert RunWait("child", "x", target="x").describe() == "child run x"
