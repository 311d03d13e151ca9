"""Reset and fork on both stores: the new run's history, the links, replay, and the bad inputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harvest_engine import (
    ApplicationError,
    ExecutionFilter,
    ExecutionNotFound,
    InvalidResetPoint,
    NotResettable,
    RetryPolicy,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowReplayer,
    activity,
    workflow,
)

Open = Callable[..., SqliteRuntime]

# Side effects counted from the bodies: how often each step really ran.
RAN: dict[str, int] = {}
BUGGY = {"ship": True}


def ran(name: str) -> None:
    RAN[name] = RAN.get(name, 0) + 1


@activity
async def charge(ctx: Any, order: dict[str, Any]) -> str:
    ran("charge")
    return f"charged {order['id']}"


@activity(retry=RetryPolicy(max_attempts=2, initial_interval="1ms"))
async def ship(ctx: Any, order: dict[str, Any]) -> str:
    ran("ship")
    if BUGGY["ship"]:
        return str(order["amount"])  # the bug: orders have no amount
    return f"shipped {order['id']}"


@activity
async def mail(ctx: Any, order: dict[str, Any]) -> str:
    ran("mail")
    return f"mailed {order['id']}"


@workflow
async def order_flow(ctx: WorkflowContext, order: dict[str, Any]) -> list[str]:
    charged = await ctx.execute_activity(charge, order)
    shipped = await ctx.execute_activity(ship, order)
    mailed = await ctx.execute_activity(mail, order)
    return [charged, shipped, mailed]


@workflow
async def signalled(ctx: WorkflowContext, _: Any) -> list[Any]:
    first = await ctx.execute_activity(charge, {"id": "S"})
    got = [await ctx.wait_for_signal("item") for _ in range(2)]
    return [first, *got]


@workflow
async def fails_itself(ctx: WorkflowContext, order: dict[str, Any]) -> str:
    await ctx.execute_activity(charge, order)
    if BUGGY["ship"]:
        raise ApplicationError("the workflow's own bug")
    return "done"


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RAN.clear()
    BUGGY["ship"] = True


def runtime(open_rt: Open) -> SqliteRuntime:
    rt: SqliteRuntime = open_rt()
    for wf in (order_flow, signalled, fails_itself):
        rt.register_workflow(wf)
    for act in (charge, ship, mail):
        rt.register_activity(act)
    return rt


async def failed_order(rt: SqliteRuntime) -> Any:
    exec_id = rt.start_workflow_with_id("order_flow", "K1", {"id": "K1"})
    await rt.run_until_idle()
    for _ in range(5):  # the retry's 1 ms backoff, on the manual clock
        if rt.describe(exec_id).state != "RUNNING":
            break
        rt.clock.advance(1)  # type: ignore[attr-defined]
        await rt.run_until_idle()
    assert rt.describe(exec_id).state == "FAILED"
    return exec_id


def types(rt: SqliteRuntime, exec_id: Any) -> list[str]:
    return [e.type for e in rt.load_history(exec_id)]


async def test_reset_of_a_failed_run_goes_on_from_the_failed_step_with_todays_code(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    old = await failed_order(rt)
    assert RAN == {"charge": 1, "ship": 2}

    BUGGY["ship"] = False  # the fix
    new = rt.reset(old, reason="fixed the KeyError")

    state = await rt.run_until_blocked(new)
    assert state == RunState.Completed(output=["charged K1", "shipped K1", "mailed K1"])
    assert RAN == {"charge": 1, "ship": 3, "mail": 1}  # the card is charged once
    old_row, new_row = rt.describe(old), rt.describe(new)
    assert old_row.state == "FAILED"  # a closed run keeps its end
    assert (old_row.reset_to, new_row.reset_from) == (new, old)
    assert new_row.workflow_id == "K1"
    assert old_row.reset_from is None
    assert new_row.reset_to is None
    # The old history up to the failed step, then what today's code did.
    assert types(rt, new)[:3] == types(rt, old)[:3]
    assert types(rt, new)[3:] == [
        "ActivityScheduled",
        "ActivityCompleted",
        "ActivityScheduled",
        "ActivityCompleted",
        "WorkflowCompleted",
    ]
    # The reset history replays on today's code.
    WorkflowReplayer([order_flow]).replay(rt.load_history(new))


async def test_reset_of_a_running_run_terminates_it_and_stages_its_later_signals_again(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    old = rt.start_workflow_with_id("signalled", "S", None)
    await rt.run_until_blocked(old)
    rt.send_signal(old, "item", "a")
    assert await rt.run_until_blocked(old) == RunState.WaitingSignal(name="item")
    rt.send_signal(old, "item", "b")  # staged, not yet in the history

    # Back to just after the charge: both signals come after the point.
    point = next(e.seq for e in rt.load_history(old) if e.type == "ActivityCompleted")
    new = rt.reset(old, to_event=point, reason="go again")

    assert rt.describe(old).state == "TERMINATED"
    assert rt.load_history(old)[-1].attrs["reason"] == "go again"
    assert await rt.run_until_blocked(new) == RunState.Completed(
        output=["charged S", "a", "b"]
    )
    assert RAN == {"charge": 1}
    WorkflowReplayer([signalled]).replay(rt.load_history(new))


async def test_fork_keeps_the_first_steps_results_and_never_runs_them_again(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    BUGGY["ship"] = False
    old = rt.start_workflow_with_id("order_flow", "K2", {"id": "K2"})
    await rt.run_until_blocked(old)
    assert RAN == {"charge": 1, "ship": 1, "mail": 1}
    before = rt.load_history(old)

    forked = rt.fork(old, from_step=3)

    assert await rt.run_until_blocked(forked) == RunState.Completed(
        output=["charged K2", "shipped K2", "mailed K2"]
    )
    assert RAN == {"charge": 1, "ship": 1, "mail": 2}  # only step 3 ran again
    assert rt.load_history(old) == before  # the old run is untouched
    detail = rt.describe(forked)
    assert detail.forked_from == old
    assert detail.workflow_id == str(forked)  # a new workflow id by default
    named = rt.fork(old, from_step=1, workflow_id="K2-again")
    assert rt.describe(named).workflow_id == "K2-again"
    assert types(rt, named) == ["WorkflowStarted"]  # step 1 runs afresh
    WorkflowReplayer([order_flow]).replay(rt.load_history(forked))


async def test_a_run_failed_in_its_own_code_resets_to_its_last_decision(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    old = rt.start_workflow("fails_itself", {"id": "W"})
    assert isinstance(await rt.run_until_blocked(old), RunState.Failed)

    BUGGY["ship"] = False
    new = rt.reset(old, reason="fixed the workflow")

    assert await rt.run_until_blocked(new) == RunState.Completed(output="done")
    assert RAN == {"charge": 1}
    assert types(rt, new) == [
        "WorkflowStarted",
        "ActivityScheduled",
        "ActivityCompleted",
        "WorkflowCompleted",
    ]


async def test_bad_reset_and_fork_points_are_typed_errors_and_write_nothing(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    old = await failed_order(rt)
    runs = len(rt.list_executions(ExecutionFilter()).executions)
    last = rt.load_history(old)[-1].seq

    # After ActivityScheduled of ship, ship is open: not a decision boundary.
    open_point = [e.seq for e in rt.load_history(old) if e.type == "ActivityScheduled"][
        1
    ]
    for bad in (open_point, last, last + 5, 0):
        with pytest.raises(InvalidResetPoint) as caught:
            rt.reset(old, to_event=bad, reason="x")
        assert "decision boundaries are 1, 3" in str(caught.value)
    with pytest.raises(InvalidResetPoint, match=r"steps 1\.\.2"):
        rt.fork(old, from_step=3)
    with pytest.raises(InvalidResetPoint):
        rt.fork(old, from_step=0)
    with pytest.raises(ExecutionNotFound):
        rt.reset("no-such-run", reason="x")
    with pytest.raises(TypeError):
        rt.reset(old, reason=42)  # type: ignore[arg-type]
    never = rt.start_workflow("order_flow", {"id": "N"})  # never decided
    with pytest.raises(NotResettable):
        rt.reset(never, reason="x")
    with pytest.raises(NotResettable):
        rt.fork(never, from_step=1)

    assert len(rt.list_executions(ExecutionFilter()).executions) == runs + 1
    assert rt.describe(old).reset_to is None
    assert rt.describe(never).state == "RUNNING"


async def test_a_reset_of_a_closed_run_ends_the_ids_running_run(open_rt: Open) -> None:
    rt = runtime(open_rt)
    old = await failed_order(rt)
    current = rt.start_workflow_with_reuse_policy(
        "signalled", "K1", None, "ALLOW_DUPLICATE"
    ).exec_id  # another workflow's run of the same id: not the key
    again = rt.start_workflow_with_id("order_flow", "K1", {"id": "K1"})
    new = rt.reset(old, reason="one run per id")
    assert rt.describe(again).state == "TERMINATED"
    assert rt.describe(current).state == "RUNNING"
    assert rt.describe(new).state == "RUNNING"
