"""A listing flags only damaged runs, on either store: sound runs list with `damaged` None."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine import ExecutionFilter, WorkflowContext, workflow

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine import SqliteRuntime


@workflow
async def echo_listed(ctx: WorkflowContext, value: int) -> int:
    return value


async def test_sound_runs_list_undamaged_on_either_store(
    open_rt: Callable[..., SqliteRuntime],
) -> None:
    rt = open_rt()
    rt.register_workflow(echo_listed)
    done = rt.start_workflow("echo_listed", 1)
    await rt.run_until_blocked(done)
    rt.start_workflow("echo_listed", 2)  # RUNNING, not yet decided

    page = rt.list_executions(ExecutionFilter())
    visited = []
    rt.visit_executions(ExecutionFilter(), visited.append)

    assert [run.damaged for run in page.executions] == [None, None]
    assert [run.damaged for run in visited] == [None, None]
