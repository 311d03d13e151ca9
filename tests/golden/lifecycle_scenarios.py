"""Golden histories of the run-lifecycle events (issue 3), recorded with pinned ids and a manual clock.

    python -m tests.golden.lifecycle_scenarios

re-records tests/golden/lifecycle/*.json on purpose; review the diff. Every
exec id a scenario creates (starts, successors, retries) comes from a
counter, and child ids derive from their parent's, so two recordings give
the same bytes.
"""

from __future__ import annotations

import asyncio
import itertools
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from unittest import mock

from harvest_engine import (
    ActivityError,
    ApplicationError,
    ExecutionId,
    ExternalWorkflowError,
    HistoryEvent,
    ManualClock,
    RetryPolicy,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)
from tests.golden.regenerate import encode, without_traces

FOLDER = Path(__file__).resolve().parent / "lifecycle"


@activity
async def note(ctx: Any, value: Any) -> Any:
    return value


@activity(local=True, retry=RetryPolicy(max_attempts=2, initial_interval="1s"))
async def local_flaky(ctx: Any, fail: bool) -> str:
    if fail or ctx.info().attempt == 1:
        raise ValueError(f"attempt {ctx.info().attempt}")
    return "local ok"


@workflow
async def g_cancel(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.execute_activity(note, "work")
    if ctx.is_cancelled():
        await ctx.execute_activity(note, f"cleanup: {ctx.cancellation_reason()}")
        return "cleaned"
    return await ctx.wait_for_signal("next")


@workflow
async def g_cancel_sealed(ctx: WorkflowContext, _: Any) -> Any:
    await ctx.execute_activity(note, "work")
    if ctx.is_cancelled():
        # Left pending when the body returns: the seal fails it (CancelSealed).
        left = asyncio.ensure_future(ctx.execute_activity(note, "left behind"))
        await asyncio.sleep(0)
        assert not left.done()
        return "stopped"
    return await ctx.wait_for_signal("next")


@workflow
async def g_mutex(ctx: WorkflowContext, _: Any) -> Any:
    async with ctx.mutex("ledger") as guard:
        await ctx.execute_activity(note, guard.lock_seq)
    return "released"


@workflow
async def g_local(ctx: WorkflowContext, _: Any) -> Any:
    first = await ctx.execute_local_activity(local_flaky, False)
    try:
        await ctx.execute_local_activity(local_flaky, True)
    except ActivityError as exc:
        return [first, exc.message]
    return [first]


@workflow
async def g_child(ctx: WorkflowContext, fail: bool) -> Any:
    if fail:
        raise ApplicationError("child says no", type="No", non_retryable=True)
    return "child ok"


@workflow
async def g_parent(ctx: WorkflowContext, _: Any) -> Any:
    ok = await ctx.spawn_child_workflow(g_child, False)
    try:
        await ctx.spawn_child_workflow(g_child, True)
    except ApplicationError as exc:
        return [ok, exc.type]
    return [ok]


@workflow
async def g_target(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("hello")


@workflow
async def g_external(ctx: WorkflowContext, _: Any) -> Any:
    first = await ctx.spawn_child_workflow_detached(g_target, None, "abandon")
    second = await ctx.spawn_child_workflow_detached(g_target, None, "abandon")
    await ctx.signal_external_workflow(first, "hello", "there")
    answer = await ctx.await_external_workflow(first)
    await ctx.request_cancel_external_workflow(second)
    try:
        await ctx.await_external_workflow(second)
    except ExternalWorkflowError as exc:
        return [answer, exc.type]
    return [answer]


@workflow(execution_timeout="1m")
async def g_timeout(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("never")


@workflow(retry=RetryPolicy(max_attempts=2, initial_interval="5s"))
async def g_retry(ctx: WorkflowContext, _: Any) -> Any:
    raise ApplicationError(f"attempt {ctx.info().attempt} failed")


@workflow
async def g_continue(ctx: WorkflowContext, n: int) -> Any:
    await ctx.execute_activity(note, n)
    ctx.continue_as_new(n + 1)


WORKFLOWS = [
    g_cancel,
    g_cancel_sealed,
    g_mutex,
    g_local,
    g_child,
    g_parent,
    g_target,
    g_external,
    g_timeout,
    g_retry,
    g_continue,
]
ACTIVITIES = [note, local_flaky]

Scenario = Callable[[SqliteRuntime, ManualClock], Awaitable[ExecutionId]]


async def cancel(rt: SqliteRuntime, clock: ManualClock) -> ExecutionId:
    run = rt.start_workflow("g_cancel", None)
    await rt.run_until_blocked(run)
    rt.cancel(run, "user stopped it")
    await rt.run_until_blocked(run)
    return run


async def cancel_sealed(rt: SqliteRuntime, clock: ManualClock) -> ExecutionId:
    run = rt.start_workflow("g_cancel_sealed", None)
    await rt.run_until_blocked(run)
    rt.cancel(run, "user stopped it")
    await rt.run_until_blocked(run)
    return run


async def mutex(rt: SqliteRuntime, clock: ManualClock) -> ExecutionId:
    run = rt.start_workflow("g_mutex", None)
    await rt.run_until_blocked(run)
    return run


async def local(rt: SqliteRuntime, clock: ManualClock) -> ExecutionId:
    run = rt.start_workflow("g_local", None)
    for _ in range(6):
        await rt.run_until_blocked(run)
        clock.advance("1s")
    return run


async def children(rt: SqliteRuntime, clock: ManualClock) -> ExecutionId:
    run = rt.start_workflow("g_parent", None)
    await rt.run_until_blocked(run)
    return run


async def external(rt: SqliteRuntime, clock: ManualClock) -> ExecutionId:
    run = rt.start_workflow("g_external", None)
    await rt.run_until_blocked(run)
    return run


async def timeout(rt: SqliteRuntime, clock: ManualClock) -> ExecutionId:
    run = rt.start_workflow("g_timeout", None)
    await rt.run_until_blocked(run)
    clock.advance("1m")
    await rt.run_until_blocked(run)
    return run


async def retry(rt: SqliteRuntime, clock: ManualClock) -> ExecutionId:
    run = rt.start_workflow("g_retry", None)
    await rt.run_until_blocked(run)
    return run


async def continue_as_new(rt: SqliteRuntime, clock: ManualClock) -> ExecutionId:
    run = rt.start_workflow("g_continue", 1)
    await rt.run_until_blocked(run)
    return run


SCENARIOS: dict[str, Scenario] = {
    "cancel": cancel,
    "cancel_sealed": cancel_sealed,
    "mutex": mutex,
    "local_activities": local,
    "children": children,
    "external": external,
    "timeout": timeout,
    "retry": retry,
    "continue_as_new": continue_as_new,
}


async def record(name: str, db: Path) -> list[HistoryEvent]:
    """Run one scenario on a fresh file; the history of its main run."""
    counter = itertools.count(1)
    pinned = classmethod(lambda cls: cls(str(uuid.UUID(int=next(counter)))))
    with (
        mock.patch.object(ExecutionId, "new", pinned),
        SqliteRuntime.open(db, clock=ManualClock()) as rt,
    ):
        clock = rt.clock
        assert isinstance(clock, ManualClock)
        for wf in WORKFLOWS:
            rt.register_workflow(wf)
        for act in ACTIVITIES:
            rt.register_activity(act)
        run = await SCENARIOS[name](rt, clock)
        return without_traces(rt.load_history(run))


def path_of(name: str) -> Path:
    """Where a scenario's history is committed."""
    return FOLDER / f"{name}.json"


def main() -> None:
    """Rewrite every lifecycle golden file."""
    with tempfile.TemporaryDirectory() as tmp:
        for name in SCENARIOS:
            events = asyncio.run(record(name, Path(tmp) / f"{name}.db"))
            path_of(name).write_text(encode(events))
            print(f"wrote {path_of(name)}")


if __name__ == "__main__":
    main()
