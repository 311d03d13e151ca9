"""Sound runs list as sound on both stores: through the runtime, the reader and `harvest runs`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from harvest_engine import (
    ActivityContext,
    ApplicationError,
    ExecutionFilter,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from tests.stores import Databases, OpenReader

Open = Callable[..., SqliteRuntime]
ROOT = Path(__file__).resolve().parents[2]


@activity
def double(ctx: ActivityContext, n: int) -> int:
    return n * 2


@workflow
async def doubled(ctx: WorkflowContext, n: int) -> int:
    return await ctx.execute_activity(double, n)


@workflow
async def refused(ctx: WorkflowContext, _: None) -> None:
    raise ApplicationError("no", type="Refused", non_retryable=True)


@workflow
async def parked(ctx: WorkflowContext, _: None) -> str:
    return str(await ctx.wait_for_signal("go"))


async def seed_four_states(rt: SqliteRuntime) -> dict[str, str]:
    """One run completed, one failed, one running (never driven), one waiting on a signal."""
    for fn in (doubled, refused, parked):
        rt.register_workflow(fn)
    rt.register_activity(double)
    ids = {
        "completed": str(rt.start_workflow("doubled", 2)),
        "failed": str(rt.start_workflow("refused", None)),
        "waiting": str(rt.start_workflow("parked", None)),
    }
    for exec_id in ids.values():
        await rt.run_until_blocked(exec_id)
    ids["running"] = str(rt.start_workflow("doubled", 3))
    return ids


def harvest_runs(target: str) -> list[dict[str, object]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "harvest_engine", "runs", target, "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    runs: list[dict[str, object]] = json.loads(done.stdout)["executions"]
    return runs


@pytest.mark.slow  # `harvest runs` is a fresh interpreter
async def test_listed_runs_in_every_state_are_not_damaged(
    open_rt: Open, open_reader: OpenReader, databases: Databases, db_path: Path
) -> None:
    rt = open_rt()
    ids = await seed_four_states(rt)
    states = {"completed": "COMPLETED", "failed": "FAILED"}
    states.update(running="RUNNING", waiting="RUNNING")
    expected = {ids[k]: states[k] for k in ids}

    listed = rt.list_executions(ExecutionFilter()).executions
    assert {str(r.exec_id): (r.state, r.damaged) for r in listed} == {
        i: (s, None) for i, s in expected.items()
    }
    visited: list[tuple[str, str | None]] = []
    rt.visit_executions(
        ExecutionFilter(), lambda d: visited.append((str(d.exec_id), d.damaged))
    )
    assert sorted(visited) == sorted((i, None) for i in expected)
    rt.close()

    reader = open_reader()
    read = reader.list_executions(ExecutionFilter()).executions
    assert {str(r.exec_id): r.damaged for r in read} == dict.fromkeys(expected)
    reader.close()

    target = str(db_path) if databases.server is None else databases.dsn(db_path)
    printed = harvest_runs(target)
    assert {str(r["exec_id"]): (r["state"], r["damaged"]) for r in printed} == {
        i: (s, None) for i, s in expected.items()
    }
