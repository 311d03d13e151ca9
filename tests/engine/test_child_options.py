"""Child start options: workflow_id, retry, execution_timeout and parent_close_policy, each honoured."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from harvest_engine import (
    ApplicationError,
    ChildWorkflowError,
    ExecutionFilter,
    ExecutionOutcome,
    ManualClock,
    ParentClosePolicy,
    RetryPolicy,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowPanicked,
    WorkflowReplayer,
    workflow,
)

Open = Callable[..., SqliteRuntime]


@workflow
async def waits_for_go(ctx: WorkflowContext, _: Any = None) -> str:
    await ctx.wait_for_signal("go")
    return ctx.info().workflow_id


@workflow
async def names_itself(ctx: WorkflowContext, _: Any = None) -> str:
    return ctx.info().workflow_id


@workflow
async def fails_first_attempt(ctx: WorkflowContext, _: Any = None) -> int:
    if ctx.info().attempt == 1:
        raise ApplicationError("first attempt fails")
    return ctx.info().attempt


@workflow
async def child_by_id(ctx: WorkflowContext, spec: dict[str, Any]) -> Any:
    options = dict(spec.get("options") or {})
    if "retry" in options:
        options["retry"] = RetryPolicy(**options["retry"])
    try:
        return {"ok": await ctx.spawn_child_workflow(spec["child"], None, **options)}
    except ChildWorkflowError as exc:
        return {"error": exc.type}


@workflow
async def two_with_one_id(ctx: WorkflowContext, _: Any = None) -> Any:
    first = await ctx.spawn_child_workflow_detached(
        waits_for_go, None, "abandon", workflow_id="job-7"
    )
    try:
        await ctx.spawn_child_workflow(waits_for_go, None, workflow_id="job-7")
    except ChildWorkflowError as exc:
        second = {"type": exc.type, "holder": exc.details["exec_id"]}
    try:
        await ctx.spawn_child_workflow_detached(waits_for_go, None, workflow_id="job-7")
    except ChildWorkflowError as exc:
        third = exc.type
    await ctx.wait_for_signal("go")
    return {"first": str(first), "second": second, "third": third}


@workflow
async def leaves_child_behind(ctx: WorkflowContext, policy: str | None) -> str:
    try:
        await ctx.spawn_child_workflow(
            waits_for_go, None, timeout="5s", parent_close_policy=policy
        )
    except ChildWorkflowError as exc:
        return exc.type
    return "child finished"


@workflow
async def detached_with_options(ctx: WorkflowContext, _: Any = None) -> str:
    child = await ctx.spawn_child_workflow_detached(
        fails_first_attempt,
        None,
        "abandon",
        workflow_id="nightly-1",
        retry=RetryPolicy(max_attempts=2, initial_interval="1s"),
        execution_timeout="1h",
    )
    return str(child)


WORKFLOWS = [
    detached_with_options,
    waits_for_go,
    names_itself,
    fails_first_attempt,
    child_by_id,
    two_with_one_id,
    leaves_child_behind,
]


def opened(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    return rt


def only_child(rt: SqliteRuntime, parent: Any) -> str:
    children = [
        e.attrs["child"]
        for e in rt.load_history(parent)
        if e.type == "ChildWorkflowStarted" and "refused" not in e.attrs
    ]
    assert len(children) == 1
    return str(children[0])


async def test_a_child_runs_under_the_workflow_id_the_parent_gave(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = opened(open_rt)
    parent = rt.start_workflow(
        "child_by_id", {"child": "names_itself", "options": {"workflow_id": "inv-9"}}
    )

    assert await rt.run_until_blocked(parent) == RunState.Completed(
        output={"ok": "inv-9"}
    )
    assert rt.describe(only_child(rt, parent)).workflow_id == "inv-9"
    children = rt.list_executions(ExecutionFilter().parent(parent)).executions
    assert [(c.workflow_id, c.state) for c in children] == [("inv-9", "COMPLETED")]
    closed = ExecutionFilter().parent(parent).closed_after(clock.now())
    assert len(rt.list_executions(closed).executions) == 1
    earlier = ExecutionFilter().parent(parent).closed_before(clock.now())
    assert rt.list_executions(earlier).executions == []


async def test_a_workflow_id_held_by_a_running_run_refuses_the_child_start(
    open_rt: Open,
) -> None:
    rt = opened(open_rt)
    parent = rt.start_workflow("two_with_one_id")
    assert await rt.run_until_blocked(parent) == RunState.WaitingSignal(name="go")
    first = only_child(rt, parent)
    rt.close()

    rt = opened(open_rt)  # the refusals replay from the history
    rt.send_signal(parent, "go")
    state = await rt.run_until_blocked(parent)

    assert state == RunState.Completed(
        output={
            "first": first,
            "second": {"type": "ChildWorkflowAlreadyStarted", "holder": first},
            "third": "ChildWorkflowAlreadyStarted",
        }
    )
    assert rt.describe(first).state == "RUNNING"
    assert WorkflowReplayer(WORKFLOWS).replay(rt.load_history(parent)).closed


async def test_a_childs_retry_policy_retries_it_and_the_parent_gets_the_retry_result(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = opened(open_rt)
    retry = {"max_attempts": 2, "initial_interval": "1s"}
    parent = rt.start_workflow(
        "child_by_id", {"child": "fails_first_attempt", "options": {"retry": retry}}
    )

    await rt.run_until_blocked(parent)
    clock.advance(1)

    assert await rt.run_until_blocked(parent) == RunState.Completed(output={"ok": 2})


async def test_without_a_retry_policy_the_child_failure_reaches_the_parent(
    open_rt: Open,
) -> None:
    rt = opened(open_rt)
    parent = rt.start_workflow("child_by_id", {"child": "fails_first_attempt"})

    assert await rt.run_until_blocked(parent) == RunState.Completed(
        output={"error": "ApplicationError"}
    )


async def test_a_childs_execution_timeout_times_it_out(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = opened(open_rt)
    parent = rt.start_workflow(
        "child_by_id",
        {"child": "waits_for_go", "options": {"execution_timeout": "10s"}},
    )
    await rt.run_until_blocked(parent)
    child = only_child(rt, parent)

    clock.advance(10)
    state = await rt.run_until_blocked(parent)

    assert rt.describe(child).state == "TIMED_OUT"
    assert state == RunState.Completed(output={"error": "WorkflowExecutionTimeout"})


async def test_a_detached_child_takes_the_same_options(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = opened(open_rt)
    parent = rt.start_workflow("detached_with_options")
    state = await rt.run_until_blocked(parent)
    assert isinstance(state, RunState.Completed)
    child = state.output

    first = rt.describe(child)
    assert first.workflow_id == "nightly-1"
    assert first.deadline == clock.now() + timedelta(hours=1)
    await rt.run_until_blocked(child)
    assert rt.describe(child).state == "FAILED"  # attempt 1 fails; a retry follows
    retry = rt.successor(child)
    assert retry is not None
    clock.advance(1)
    assert await rt.run_until_blocked(retry) == RunState.Completed(output=2)


@pytest.mark.parametrize(
    ("policy", "child_state"),
    [
        (None, "RUNNING"),
        ("abandon", "RUNNING"),
        ("terminate", "FAILED"),
        (ParentClosePolicy.REQUEST_CANCEL.value, "CANCELLED"),
    ],
)
async def test_an_attached_childs_parent_close_policy_applies_when_the_parent_ends(
    open_rt: Open, clock: ManualClock, policy: str | None, child_state: str
) -> None:
    rt = opened(open_rt)
    parent = rt.start_workflow("leaves_child_behind", policy)
    await rt.run_until_blocked(parent)
    child = only_child(rt, parent)

    clock.advance(5)

    assert await rt.run_until_blocked(parent) == RunState.Completed(
        output="ChildWorkflowTimeout"
    )
    assert rt.describe(child).state == child_state
    assert rt.outcome(parent) == ExecutionOutcome.Completed(
        output="ChildWorkflowTimeout"
    )


@pytest.mark.parametrize(
    "options",
    [
        {"workflow_id": "  "},
        {"execution_timeout": 0},
        {"parent_close_policy": "sometimes"},
    ],
)
async def test_a_bad_child_option_is_a_bug_in_the_parent(
    open_rt: Open, options: dict[str, Any]
) -> None:
    rt = opened(open_rt)
    parent = rt.start_workflow(
        "child_by_id", {"child": "names_itself", "options": options}
    )

    with pytest.raises(WorkflowPanicked, match=r"workflow id|execution_timeout|policy"):
        await rt.run_until_blocked(parent)
    assert [e.type for e in rt.load_history(parent)] == ["WorkflowStarted"]
