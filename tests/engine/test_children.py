"""Child workflows and commands between runs (guide §9): starts, results, close policies, awaits."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from harvest_engine import (
    ApplicationError,
    ChildWorkflowError,
    ExecutionId,
    ExecutionOutcome,
    ExternalWorkflowError,
    ManualClock,
    ParentClosePolicy,
    RunState,
    SqliteRuntime,
    UnknownWorkflow,
    WorkflowContext,
    WorkflowReplayer,
    activity,
    workflow,
)

Open = Callable[..., SqliteRuntime]


@activity
async def charge(ctx: Any, cents: int) -> str:
    return f"charged {cents}"


@workflow
async def charge_card(ctx: WorkflowContext, cents: int) -> Any:
    return {
        "receipt": await ctx.execute_activity(charge, cents),
        "parent": ctx.info().parent_execution_id,
    }


@workflow
async def fan_out(ctx: WorkflowContext, amounts: list[int]) -> Any:
    results = await asyncio.gather(
        *(ctx.spawn_child_workflow(charge_card, a) for a in amounts)
    )
    return [r["receipt"] for r in results]


@workflow
async def failing_child(ctx: WorkflowContext, _: Any) -> Any:
    raise ApplicationError(
        "card declined", type="Declined", non_retryable=True, details={"code": 51}
    )


@workflow
async def waiting_child(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("approve")


@workflow
async def looping_child(ctx: WorkflowContext, n: int) -> Any:
    ctx.continue_as_new(n + 1)


@workflow
async def session_child(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.create_session()


@workflow
async def parent_of(ctx: WorkflowContext, spec: dict[str, Any]) -> Any:
    try:
        return {
            "ok": await ctx.spawn_child_workflow(
                spec["child"], spec.get("input"), timeout=spec.get("timeout")
            )
        }
    except ChildWorkflowError as exc:
        return {
            "error": exc.type,
            "message": exc.message,
            "details": exc.details,
            "non_retryable": exc.non_retryable,
        }


@workflow
async def detaches(ctx: WorkflowContext, spec: dict[str, Any]) -> Any:
    child = await ctx.spawn_child_workflow_detached(
        spec["child"], spec.get("input"), spec["policy"]
    )
    await ctx.wait_for_signal("finish")
    return str(child)


@workflow
async def middle(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.spawn_child_workflow_detached(
        waiting_child, None, ParentClosePolicy.REQUEST_CANCEL
    )
    return await ctx.wait_for_signal("never")


@workflow
async def talks_to(ctx: WorkflowContext, spec: dict[str, Any]) -> Any:
    target = spec["target"]
    try:
        if spec["op"] == "signal":
            await ctx.signal_external_workflow(target, "approve", "yes")
            return "signalled"
        if spec["op"] == "cancel":
            await ctx.request_cancel_external_workflow(target)
            return "cancelled"
        return {"result": await ctx.await_external_workflow(target)}
    except ExternalWorkflowError as exc:
        return {"error": exc.type}


@workflow
async def cancels_own_parent(ctx: WorkflowContext, _: Any) -> Any:
    parent = ctx.info().parent_execution_id
    assert parent is not None
    await ctx.request_cancel_external_workflow(parent)
    await ctx.execute_activity(charge, 1)  # never applied: the cascade sealed this run
    return "unreachable"


@workflow
async def loop_three(ctx: WorkflowContext, n: int) -> Any:
    if n < 3:
        ctx.continue_as_new(n + 1)
    return f"finished at {n}"


WORKFLOWS = [
    charge_card,
    fan_out,
    failing_child,
    waiting_child,
    looping_child,
    session_child,
    parent_of,
    detaches,
    middle,
    talks_to,
    cancels_own_parent,
    loop_three,
]


def runtime(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    rt.register_activity(charge)
    return rt


def children_of(rt: SqliteRuntime, exec_id: Any) -> list[ExecutionId]:
    return [
        ExecutionId(e.attrs["child"])
        for e in rt.load_history(exec_id)
        if e.type == "ChildWorkflowStarted"
    ]


async def test_a_parent_fans_out_and_gathers_its_children_in_one_drive(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    parent = rt.start_workflow("fan_out", [100, 250, 75])

    state = await rt.run_until_blocked(parent)

    assert state == RunState.Completed(
        output=["charged 100", "charged 250", "charged 75"]
    )
    kids = children_of(rt, parent)
    assert len(kids) == 3
    for kid in kids:
        assert rt.parent_execution(kid) == parent
        assert rt.describe(kid).workflow_id == str(kid)
        outcome = rt.outcome(kid)
        assert isinstance(outcome, ExecutionOutcome.Completed)
        assert outcome.output["parent"] == str(parent)  # ctx.info().parent_execution_id
    types = [e.type for e in rt.load_history(parent)]
    assert types.count("ChildWorkflowCompleted") == 3
    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(parent)).closed


async def test_a_child_failure_reaches_the_parent_with_its_type_and_details(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    parent = rt.start_workflow("parent_of", {"child": "failing_child"})

    state = await rt.run_until_blocked(parent)

    assert state == RunState.Completed(
        output={
            "error": "Declined",
            "message": "card declined",
            "details": {"code": 51},
            "non_retryable": True,
        }
    )
    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(parent)).closed


@pytest.mark.parametrize("ending", ["cancel", "terminate"])
async def test_a_cancelled_or_terminated_child_fails_the_wait_with_its_reason(
    open_rt: Open, ending: str
) -> None:
    rt = runtime(open_rt)
    parent = rt.start_workflow("parent_of", {"child": "waiting_child"})
    state = await rt.run_until_blocked(parent)
    assert isinstance(state, RunState.WaitingWorkflow)
    child = state.exec_id
    assert children_of(rt, parent) == [child]

    getattr(rt, ending)(child, "ops said so")
    result = await rt.run_until_blocked(parent)

    word = "cancelled" if ending == "cancel" else "terminated"
    assert isinstance(result, RunState.Completed)
    assert result.output["message"] == f"child workflow {word}: ops said so"


async def test_a_parent_waits_on_a_blocked_child_and_resumes_after_a_reopen(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    parent = rt.start_workflow("parent_of", {"child": "waiting_child"})
    state = await rt.run_until_blocked(parent)
    assert isinstance(state, RunState.WaitingWorkflow)
    assert await rt.run_until_blocked(state.exec_id) == RunState.WaitingSignal(
        name="approve"
    )
    rt.close()

    reopened = runtime(open_rt)
    reopened.send_signal(state.exec_id, "approve", "ok")
    await reopened.run_until_idle()

    assert reopened.outcome(parent) == ExecutionOutcome.Completed(output={"ok": "ok"})


async def test_a_child_deadline_that_is_due_wins_over_a_late_result(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = runtime(open_rt)
    parent = rt.start_workflow("parent_of", {"child": "waiting_child", "timeout": "1m"})
    state = await rt.run_until_blocked(parent)
    assert isinstance(state, RunState.WaitingWorkflow)
    rt.send_signal(state.exec_id, "approve", "late")
    await rt.run_until_blocked(state.exec_id)
    clock.advance("1m")

    result = await rt.run_until_blocked(parent)

    assert isinstance(result, RunState.Completed)
    assert result.output["error"] == "ChildWorkflowTimeout"
    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(parent)).closed


async def test_a_child_cannot_continue_as_new(open_rt: Open) -> None:
    rt = runtime(open_rt)
    parent = rt.start_workflow("parent_of", {"child": "looping_child", "input": 1})

    result = await rt.run_until_blocked(parent)

    assert isinstance(result, RunState.Completed)
    assert result.output["message"] == (
        "continue_as_new is not supported in child workflows in this release"
    )


async def test_an_unregistered_child_leaves_the_parent_running_until_a_fix(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    parent = rt.start_workflow("parent_of", {"child": "audit"})

    with pytest.raises(UnknownWorkflow):
        await rt.run_until_blocked(parent)
    assert rt.outcome(parent) == ExecutionOutcome.Running()
    assert children_of(rt, parent) == []

    @workflow(name="audit")
    async def audit(ctx: WorkflowContext, _: Any) -> str:
        return "audited"

    rt.register_workflow(audit)
    assert await rt.run_until_blocked(parent) == RunState.Completed(
        output={"ok": "audited"}
    )


async def test_a_rejected_child_fails_the_parent_wait_without_raising(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    parent = rt.start_workflow("parent_of", {"child": "session_child"})

    result = await rt.run_until_blocked(parent)

    assert isinstance(result, RunState.Completed)
    assert result.output["error"] == "Unsupported"


@pytest.mark.parametrize(
    ("policy", "state"),
    [
        ("request_cancel", "CANCELLED"),
        ("terminate", "FAILED"),
        ("abandon", "RUNNING"),
    ],
)
async def test_a_detached_child_gets_its_parent_close_policy(
    open_rt: Open, policy: str, state: str
) -> None:
    rt = runtime(open_rt)
    parent = rt.start_workflow("detaches", {"child": "waiting_child", "policy": policy})
    await rt.run_until_blocked(parent)
    child = children_of(rt, parent)[0]
    assert await rt.run_until_blocked(child) == RunState.WaitingSignal(name="approve")

    rt.send_signal(parent, "finish", None)
    assert await rt.run_until_blocked(parent) == RunState.Completed(output=str(child))

    assert rt.describe(child).state == state
    if state == "CANCELLED":
        assert await rt.run_until_blocked(child) == RunState.Cancelled(
            reason="parent closed"
        )
    if state == "FAILED":
        # Guide §9: the TERMINATE policy fails the child with ParentClosed.
        ended = await rt.run_until_blocked(child)
        assert isinstance(ended, RunState.Failed)
        assert ended.error.type == "ParentClosed"
        assert ended.error.non_retryable
        assert rt.outcome(child) == ExecutionOutcome.Failed(error=ended.error)
        last = rt.load_history(child)[-1]
        assert last.type == "WorkflowFailed"
        assert last.attrs["error"]["type"] == "ParentClosed"
        assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(child)).closed


async def test_the_close_policy_cascades_through_every_level(open_rt: Open) -> None:
    rt = runtime(open_rt)
    top = rt.start_workflow("detaches", {"child": "middle", "policy": "request_cancel"})
    await rt.run_until_idle()
    mid = children_of(rt, top)[0]
    leaf = children_of(rt, mid)[0]
    assert rt.describe(leaf).state == "RUNNING"

    rt.terminate(top, "shutting down")

    assert rt.describe(mid).state == "CANCELLED"
    assert rt.describe(leaf).state == "CANCELLED"


async def test_signal_external_stages_a_signal_on_the_target(open_rt: Open) -> None:
    rt = runtime(open_rt)
    target = rt.start_workflow("waiting_child", None)
    sender = rt.start_workflow("talks_to", {"op": "signal", "target": str(target)})

    assert await rt.run_until_blocked(sender) == RunState.Completed(output="signalled")
    assert await rt.run_until_blocked(target) == RunState.Completed(output="yes")
    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(sender)).closed


async def test_a_cancel_from_another_run_is_a_hard_seal(open_rt: Open) -> None:
    rt = runtime(open_rt)
    target = rt.start_workflow("waiting_child", None)
    await rt.run_until_blocked(target)
    rt.send_signal_idempotent(target, "note", 1, "dedupe-me")
    canceller = rt.start_workflow("talks_to", {"op": "cancel", "target": str(target)})

    assert await rt.run_until_blocked(canceller) == RunState.Completed(
        output="cancelled"
    )

    assert rt.outcome(target) == ExecutionOutcome.Terminated(state="CANCELLED")
    reason = f"cancelled by run {canceller}"
    assert await rt.run_until_blocked(target) == RunState.Cancelled(reason=reason)
    assert rt.send_signal_idempotent(target, "note", 1, "dedupe-me") is False


async def test_a_run_sealed_by_its_own_cancel_applies_no_more_of_its_batch(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    parent = rt.start_workflow(
        "detaches", {"child": "cancels_own_parent", "policy": "terminate"}
    )

    await rt.run_until_idle()

    child = children_of(rt, parent)[0]
    assert rt.describe(parent).state == "CANCELLED"
    assert rt.describe(child).state == "FAILED"
    assert "ActivityScheduled" not in [e.type for e in rt.load_history(child)]


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("unknown", {"error": "target_unknown"}),
        ("terminated", {"error": "target_terminated"}),
        ("chain", {"result": "finished at 3"}),
    ],
)
async def test_await_external_follows_the_chain_or_names_why_it_cannot(
    open_rt: Open, setup: str, expected: dict[str, Any]
) -> None:
    rt = runtime(open_rt)
    if setup == "unknown":
        target = "no-such-run"
    elif setup == "terminated":
        run = rt.start_workflow("waiting_child", None)
        rt.terminate(run, "gone")
        target = str(run)
    else:
        target = str(rt.start_workflow("loop_three", 1))
    waiter = rt.start_workflow("talks_to", {"op": "await", "target": target})

    assert await rt.run_until_blocked(waiter) == RunState.Completed(output=expected)
    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(waiter)).closed


@pytest.mark.parametrize("op", ["signal", "cancel"])
@pytest.mark.parametrize(
    ("setup", "error"),
    [
        ("unknown", "target_unknown"),
        ("terminated", "target_terminated"),
        ("completed", "target_not_running"),
    ],
)
async def test_a_signal_or_cancel_of_a_run_that_cannot_take_it_fails_at_once_naming_why(
    open_rt: Open, op: str, setup: str, error: str
) -> None:
    rt = runtime(open_rt)
    if setup == "unknown":
        target = "no-such-run"
    else:
        run = rt.start_workflow("waiting_child", None)
        await rt.run_until_blocked(run)
        if setup == "terminated":
            rt.terminate(run, "gone")
        else:
            rt.send_signal(run, "approve", "done")
            assert await rt.run_until_blocked(run) == RunState.Completed(output="done")
        target = str(run)
    sender = rt.start_workflow("talks_to", {"op": op, "target": target})

    assert await rt.run_until_blocked(sender) == RunState.Completed(
        output={"error": error}
    )
    if setup == "completed":
        assert rt.outcome(ExecutionId(target)) == ExecutionOutcome.Completed(
            output="done"
        )
    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(sender)).closed


async def test_an_attached_child_is_left_running_when_its_parent_ends(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    parent = rt.start_workflow("parent_of", {"child": "waiting_child"})
    state = await rt.run_until_blocked(parent)
    child = children_of(rt, parent)[0]
    assert state == RunState.WaitingWorkflow(exec_id=child)

    rt.cancel(parent, "parent stops")

    assert await rt.run_until_blocked(parent) == RunState.Cancelled(
        reason="parent stops"
    )
    assert rt.describe(child).state == "RUNNING"
    rt.send_signal(child, "approve", "still here")
    assert await rt.run_until_blocked(child) == RunState.Completed(output="still here")


async def test_a_waiter_on_a_blocked_target_returns_waiting_workflow_naming_it(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    target = rt.start_workflow("waiting_child", None)
    waiter = rt.start_workflow("talks_to", {"op": "await", "target": str(target)})

    assert await rt.run_until_blocked(waiter) == RunState.WaitingWorkflow(
        exec_id=target
    )
    rt.send_signal(target, "approve", "fine")
    await rt.run_until_idle()

    assert rt.outcome(waiter) == ExecutionOutcome.Completed(output={"result": "fine"})


async def test_a_run_replaced_by_terminate_if_running_closes_its_detached_children(
    open_rt: Open,
) -> None:
    from harvest_engine import WorkflowIdReusePolicy

    rt = runtime(open_rt)
    spec = {"child": "waiting_child", "policy": "request_cancel"}
    parent = rt.start_workflow_with_id("detaches", "order-9", spec)
    await rt.run_until_blocked(parent)
    child = children_of(rt, parent)[0]
    outcome = rt.start_workflow_with_reuse_policy(
        "detaches", "order-9", spec, WorkflowIdReusePolicy.TERMINATE_IF_RUNNING
    )
    assert outcome.started_fresh
    assert rt.describe(parent).state == "CONTINUED_AS_NEW"
    assert rt.describe(child).state == "CANCELLED"
