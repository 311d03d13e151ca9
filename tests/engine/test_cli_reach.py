"""The `harvest` command's reach, on both stores: `--workflow-id` for a run, and `harvest schedule ...`."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner, Result

from harvest_engine import ManualClock, WorkflowContext, workflow
from harvest_engine.cli import main
from tests.engine.served_store import ServedStore, served_store

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@workflow
async def waiter(ctx: WorkflowContext, _: Any) -> str:
    return str(await ctx.wait_for_signal("go"))


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServedStore]:
    clock = ManualClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
    for found in served_store(request, tmp_path, clock=clock):
        found.rt.register_workflow(waiter)
        yield found


async def harvest(*args: str) -> Result:
    """Run one `harvest` command line in a thread (the store is served on this loop)."""
    return await asyncio.to_thread(CliRunner().invoke, main, list(args))


async def test_every_command_taking_a_run_takes_its_workflow_id(
    served: ServedStore,
) -> None:
    db = served.where
    async with served.serving():
        started = await harvest("start", db, "waiter", "--id", "K1")
        assert started.exit_code == 0, started.output
        exec_id = started.output.strip()
        # The id the user started with, where the exec id goes: refused, with the way.
        wrong = await harvest("signal", db, "K1", "go", '"paid"')
        assert wrong.exit_code == 3
        assert "use --workflow-id K1" in wrong.output
        signalled = await harvest("signal", db, "--workflow-id", "K1", "go", '"paid"')
        assert signalled.exit_code == 0, signalled.output
        assert exec_id in signalled.output
        result = await harvest("result", db, "--workflow-id", "K1", "--json")
        assert json.loads(result.output) == {"state": "COMPLETED", "output": "paid"}
    shown = await harvest("show", db, "--workflow-id=K1", "--json")
    assert json.loads(shown.output)["exec_id"] == exec_id
    history = await harvest("history", db, "--workflow-id", "K1")
    assert "WorkflowCompleted" in history.output
    replayed = await harvest(
        "replay", db, "--workflow-id", "K1", "--module", __name__, "--json"
    )
    assert json.loads(replayed.output)["ok"] is True, replayed.output
    missing = await harvest("cancel", db, "--workflow-id", "K9")
    assert missing.exit_code == 3
    assert "no run has workflow id 'K9'" in missing.output


async def test_schedules_are_changed_from_the_command_line(
    served: ServedStore,
) -> None:
    db = served.where
    window = ["--start", "2026-01-01T00:00+00:00", "--end", "2026-01-01T02:00+00:00"]
    async with served.serving():
        upserted = await harvest(
            "schedule", "upsert", db, "waiter", "--every", "1h",
            "--overlap", "allow_all", "--max-active-runs", "10", "--input", "1",
        )  # fmt: skip
        assert upserted.exit_code == 0, upserted.output
        assert (await harvest("schedule", "pause", db, "waiter")).exit_code == 0
        listed = await harvest("schedules", db, "--json")
        assert json.loads(listed.output)[0]["paused"] is True
        assert (await harvest("schedule", "resume", db, "waiter")).exit_code == 0
        triggered = await harvest("schedule", "trigger", db, "waiter", "--json")
        assert json.loads(triggered.output)["exec_id"]
        dry = await harvest("schedule", "backfill", db, "waiter", *window, "--dry-run")
        assert dry.exit_code == 0, dry.output
        assert [row.split()[0] for row in dry.output.splitlines()] == [
            "2026-01-01T00:00:00+00:00",
            "2026-01-01T01:00:00+00:00",
            "2026-01-01T02:00:00+00:00",
        ]
        runs_before = len(served.rt.list_executions().executions)
        filled = await harvest("schedule", "backfill", db, "waiter", *window, "--json")
        assert len(json.loads(filled.output)["started"]) == 3
        assert len(served.rt.list_executions().executions) == runs_before + 3
        naive = await harvest(
            "schedule", "backfill", db, "waiter", "--start", "2026-01-01T00:00",
            "--end", "2026-01-01T02:00+00:00",
        )  # fmt: skip
        assert naive.exit_code == 2
        assert "no UTC offset" in naive.output
        both = await harvest(
            "schedule", "upsert", db, "waiter", "--every", "1h", "--cron", "* * * * *"
        )
        assert both.exit_code == 2
        assert (await harvest("schedule", "delete", db, "waiter")).exit_code == 0
        gone = await harvest("schedule", "delete", db, "waiter")
        assert gone.exit_code == 3
        assert "no schedule for 'waiter'" in gone.output
    assert served.rt.list_schedules() == []
