"""One case for every state string: run states, task statuses and attempt outcomes are upper case."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityContext,
    ApplicationError,
    ErrorInfo,
    ExecutionOutcome,
    RetryPolicy,
    RunState,
    SqliteReader,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.states import ALL_STATES

if TYPE_CHECKING:
    from pathlib import Path

Open = Callable[..., SqliteRuntime]


@activity(retry=RetryPolicy(max_attempts=2, initial_interval="1s"))
async def flaky(ctx: ActivityContext, _: Any = None) -> str:
    if ctx.info().attempt == 1:
        raise ApplicationError("first try fails")
    return "ok"


@workflow
async def tries(ctx: WorkflowContext, _: Any = None) -> str:
    result: str = await ctx.execute_activity(flaky)
    return result


async def test_attempt_outcomes_use_the_case_of_run_states_and_task_statuses(
    open_rt: Open, open_reader: Callable[..., Any], clock: Any
) -> None:
    rt = open_rt()
    rt.register_workflow(tries)
    rt.register_activity(flaky)
    exec_id = rt.start_workflow("tries")
    await rt.run_until_blocked(exec_id)
    statuses = [t.status for t in open_reader().pending_tasks(exec_id)]
    clock.advance(1)

    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="ok")
    outcomes = [a.outcome for a in rt.activity_attempts(exec_id)]
    assert outcomes == ["FAILED", "COMPLETED"]
    assert set(outcomes) <= ALL_STATES
    assert all(s == s.upper() for s in statuses)
    assert rt.describe(exec_id).state == "COMPLETED"


@pytest.mark.sqlite_only("rewrites an older SQLite file's rows with sqlite3")
async def test_outcomes_an_older_file_stored_in_lower_case_read_upper_case(
    open_rt: Open, db_path: Path, clock: Any
) -> None:
    rt = open_rt()
    rt.register_workflow(tries)
    rt.register_activity(flaky)
    exec_id = rt.start_workflow("tries")
    await rt.run_until_blocked(exec_id)
    clock.advance(1)
    await rt.run_until_blocked(exec_id)
    rt.close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE harvest_activity_attempts SET outcome = lower(outcome)")
    conn.close()

    with SqliteReader.open(db_path) as reader:
        outcomes = [a.outcome for a in reader.activity_attempts(exec_id)]
    assert outcomes == ["FAILED", "COMPLETED"]


@pytest.mark.parametrize(
    ("outcome", "terminal"),
    [
        (ExecutionOutcome.Completed(output=1), True),
        (ExecutionOutcome.Failed(error=ErrorInfo(type="x", message="m")), True),
        (ExecutionOutcome.Terminated(state="CANCELLED"), True),
        (ExecutionOutcome.Running(), False),
    ],
)
def test_execution_outcome_says_whether_the_run_has_ended_like_run_state(
    outcome: ExecutionOutcome, terminal: bool
) -> None:
    assert outcome.is_terminal is terminal
