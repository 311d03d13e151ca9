"""An attempt whose process died mid-body is recorded LOST at the next open, beside its re-run.

Here the "dead process" is a runtime that claimed a task and closed without
finishing it, which leaves the file exactly as a killed writer does; the
real SIGKILL is in tests/e2e/test_crash_recovery.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import cli_flows
import pytest
from test_cli import harvest

from harvest_engine import ManualClock, RunState, SqliteReader, SqliteRuntime

if TYPE_CHECKING:
    from pathlib import Path

Open = Callable[..., SqliteRuntime]


def opened(open_rt: Open) -> SqliteRuntime:
    rt = open_rt()
    rt.register_workflow(cli_flows.report)
    rt.register_activity(cli_flows.summarise)
    return rt


def die_holding_the_task(open_rt: Open, clock: ManualClock) -> str:
    """Start a run, claim its activity's task as a worker would, and close mid-body."""
    rt = opened(open_rt)
    exec_id = str(rt.start_workflow("report", "hi"))
    rt._engine.decider.decide(
        exec_id, clock.now()
    )  # schedule the activity, run nothing
    [task] = rt.store.ready_tasks(exec_id, clock.now())
    assert rt.store.claim_task(task.id, clock.now()) is not None
    rt.close()
    clock.advance(30)
    return exec_id


@pytest.mark.sqlite_only(
    "a reopened SQLite file records LOST; Postgres records an expired lease "
    "(tests/engine/test_postgres_store.py)"
)
async def test_reopening_records_the_lost_attempt_and_the_rerun_keeps_its_number(
    open_rt: Open, clock: ManualClock
) -> None:
    claimed_at = clock.now()
    exec_id = die_holding_the_task(open_rt, clock)

    rt = opened(open_rt)
    [lost] = rt.activity_attempts(exec_id)
    assert (lost.attempt, lost.outcome) == (1, "LOST")
    assert lost.started_at == claimed_at
    assert lost.ended_at == claimed_at + timedelta(seconds=30)
    assert lost.error is not None
    assert lost.error.type == "AttemptLost"
    assert [t.status for t in rt.store.ready_tasks(exec_id, clock.now())] == ["PENDING"]

    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="HI")
    attempts = rt.activity_attempts(exec_id)
    assert [(a.attempt, a.outcome) for a in attempts] == [(1, "LOST"), (1, "COMPLETED")]


async def test_a_clean_reopen_records_no_lost_attempt(
    open_rt: Open, clock: ManualClock
) -> None:
    rt = opened(open_rt)
    exec_id = rt.start_workflow("report", "hi")
    await rt.run_until_blocked(exec_id)
    rt.close()

    rt = opened(open_rt)
    assert [a.outcome for a in rt.activity_attempts(exec_id)] == ["COMPLETED"]


@pytest.mark.sqlite_only("the CLI reads the SQLite file at db_path")
async def test_the_cli_and_the_reader_show_the_lost_attempt(
    open_rt: Open, clock: ManualClock, db_path: Path
) -> None:
    exec_id = die_holding_the_task(open_rt, clock)
    rt = opened(open_rt)
    await rt.run_until_blocked(exec_id)
    rt.close()

    shown = harvest("show", db_path, exec_id, "--json")

    assert shown.returncode == 0, shown.stderr
    attempts: list[dict[str, Any]] = json.loads(shown.stdout)["attempts"]
    assert [(a["activity"], a["attempt"], a["outcome"]) for a in attempts] == [
        ("summarise", 1, "LOST"),
        ("summarise", 1, "COMPLETED"),
    ]
    with SqliteReader.open(db_path) as reader:
        assert [a.outcome for a in reader.activity_attempts(exec_id)] == [
            "LOST",
            "COMPLETED",
        ]
