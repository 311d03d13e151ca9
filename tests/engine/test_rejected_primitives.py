"""Rejected primitives (guide §12): seal FAILED with a typed reason; other errors leave runs RUNNING."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityInfo,
    ExecutionOutcome,
    NonDeterminismDetected,
    RunState,
    SqliteRuntime,
    Unsupported,
    WorkflowContext,
    WorkflowPanicked,
    WorkflowReplayer,
    activity,
    workflow,
)
from harvest_engine.errors import UnknownActivity

if TYPE_CHECKING:
    from tests.stores import OpenReader

Open = Callable[..., SqliteRuntime]
flags: dict[str, bool] = {}


@activity
async def fetch(ctx: Any, value: Any) -> Any:
    return value


@workflow
async def other_type(ctx: WorkflowContext, _: Any) -> Any:
    ctx.start_timer("reminder", "1h")
    await ctx.execute_activity(fetch, 1)
    ctx.continue_as_new(None, workflow_type="something_else")


@workflow
async def with_session(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.create_session()


@workflow
async def task_token(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.execute_external_activity("approve_by_email", {"to": "ops"})


@workflow
async def swallows(ctx: WorkflowContext, _: Any) -> Any:
    try:
        await ctx.create_session()
    except BaseException:  # noqa: BLE001 - the rejection still counts
        return "hidden"


@workflow
async def needs_fetch(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.execute_activity("fetch_later", 7)


@workflow
async def changes_code(ctx: WorkflowContext, _: Any) -> Any:
    name = "fetch" if not flags.get("changed") else "other"
    await ctx.execute_activity(name, 1)
    return await ctx.wait_for_signal("go")


@workflow
async def buggy(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.execute_activity(fetch, 1)
    if flags.get("bug"):
        raise KeyError("oops")
    return "fine"


@workflow
async def healthy(ctx: WorkflowContext, n: int) -> Any:
    return await ctx.execute_activity(fetch, n)


WORKFLOWS = [
    other_type,
    with_session,
    task_token,
    swallows,
    needs_fetch,
    changes_code,
    buggy,
    healthy,
]


def runtime(open_rt: Open) -> SqliteRuntime:
    flags.clear()
    rt = open_rt()
    for wf in WORKFLOWS:
        rt.register_workflow(wf)
    rt.register_activity(fetch)
    return rt


@pytest.mark.parametrize(
    ("name", "feature"),
    [
        ("other_type", "ContinueAsNew.new_workflow_type"),
        ("with_session", "CreateSession"),
        ("task_token", "ExternalActivity"),
        ("swallows", "CreateSession"),
    ],
)
async def test_an_out_of_subset_command_seals_the_run_failed_naming_the_feature(
    open_rt: Open, db_path: Any, name: str, feature: str, open_reader: OpenReader
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow(name, None)
    rt.send_signal_idempotent(exec_id, "ping", None, "ping-1")

    with pytest.raises(Unsupported) as raised:
        await rt.run_until_blocked(exec_id)

    assert raised.value.feature == feature
    outcome = rt.outcome(exec_id)
    assert isinstance(outcome, ExecutionOutcome.Failed)
    assert outcome.error.type == "Unsupported"
    assert feature in outcome.error.message
    history = rt.load_history(exec_id)
    assert history[-1].type == "WorkflowFailed"
    assert history[-1].attrs["error"]["details"] == {"feature": feature}
    with open_reader() as reader:
        assert reader.timers(str(exec_id)) == []
        assert reader.pending_tasks(str(exec_id)) == []
    assert (
        rt.send_signal_idempotent(exec_id, "ping", None, "ping-1") is False
    )  # key kept
    # A later drive reports the failure without running the body again.
    assert isinstance(await rt.run_until_blocked(exec_id), RunState.Failed)
    assert WorkflowReplayer(WORKFLOWS).replay(history).closed


async def test_an_unregistered_activity_leaves_the_run_running_until_a_fix(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("needs_fetch", None)

    with pytest.raises(UnknownActivity):
        await rt.run_until_blocked(exec_id)
    assert rt.outcome(exec_id) == ExecutionOutcome.Running()

    rt.register_activity_with_body(
        ActivityInfo(name="fetch_later", fn=None), lambda v: v * 6
    )

    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output=42)


async def test_a_divergence_leaves_the_run_running_and_resumes_after_the_fix(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("changes_code", None)
    await rt.run_until_blocked(exec_id)
    rt.cache.clear()
    flags["changed"] = True

    with pytest.raises(NonDeterminismDetected):
        await rt.run_until_blocked(exec_id)
    assert rt.outcome(exec_id) == ExecutionOutcome.Running()

    flags["changed"] = False
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="go")


async def test_a_contained_exception_under_its_budget_leaves_the_run_running(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    exec_id = rt.start_workflow("buggy", None)
    flags["bug"] = True

    with pytest.raises(WorkflowPanicked):
        await rt.run_until_blocked(exec_id)
    assert rt.outcome(exec_id) == ExecutionOutcome.Running()

    flags["bug"] = False
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="fine")


async def test_one_failing_run_never_blocks_the_rest_of_the_fleet(
    open_rt: Open,
) -> None:
    rt = runtime(open_rt)
    bad = rt.start_workflow("with_session", None)
    good = [rt.start_workflow("healthy", n) for n in range(3)]

    with pytest.raises(Unsupported):
        await rt.run_until_idle()

    assert rt.describe(bad).state == "FAILED"
    assert [rt.outcome(g) for g in good] == [
        ExecutionOutcome.Completed(output=n) for n in range(3)
    ]
    # The sealed run is terminal: later passes skip it.
    await rt.run_until_idle()
    assert await rt.poll_once() is False


async def test_poll_once_drives_the_others_in_the_same_pass(open_rt: Open) -> None:
    rt = runtime(open_rt)
    rt.start_workflow("with_session", None)
    good = rt.start_workflow("healthy", 5)

    with pytest.raises(Unsupported):
        await rt.poll_once()

    # The healthy run was decided and its activity ran in that same pass (with
    # group commit its follow-up decision is recorded in the same pass too).
    assert "ActivityCompleted" in [e.type for e in rt.load_history(good)]
