"""Reset, fork, pause, unpause and the bulk calls from outside: HarvestClient and `harvest`, both stores."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner, Result

from harvest_engine import (
    ExecutionFilter,
    ExecutionOutcome,
    InvalidResetPoint,
    SqliteRuntime,
    WorkflowContext,
    WorkflowNotRunning,
    activity,
    workflow,
)
from harvest_engine.cli.app import main
from harvest_engine.wire_repairs import filter_from_json, filter_json
from tests.engine.served_store import ServedStore, served_store

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

RAN: list[str] = []


@activity
async def tick(ctx: Any, name: str) -> str:
    RAN.append(name)
    return name


@workflow
async def ticks(ctx: WorkflowContext, _: Any) -> list[Any]:
    first = await ctx.execute_activity(tick, "one")
    second = await ctx.execute_activity(tick, "two")
    got = await ctx.wait_for_signal("go")
    return [first, second, got]


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServedStore]:
    RAN.clear()
    for found in served_store(request, tmp_path):
        found.rt.register_workflow(ticks)
        found.rt.register_activity(tick)
        yield found


async def settled(served: ServedStore, exec_id: Any, *types: str) -> list[str]:
    """Wait (serving) until the run's history ends with `types`; the history's types."""
    for _ in range(400):
        found = [e.type for e in served.rt.load_history(exec_id)]
        if found[-len(types) :] == list(types):
            return found
        await asyncio.sleep(0.01)
    raise AssertionError(f"history never ended with {types}: {found}")


async def test_a_client_resets_forks_pauses_and_acts_in_bulk(
    served: ServedStore,
) -> None:
    rt = served.rt
    exec_id = rt.start_workflow_with_id("ticks", "T1", None)
    async with served.serving():
        await settled(served, exec_id, "ActivityCompleted")
        with served.client() as client:
            await client.pause(exec_id, "look first")
            assert client.describe(exec_id).paused
            paused = client.list_executions(ExecutionFilter().paused()).executions
            assert [r.exec_id for r in paused] == [exec_id]
            await client.unpause(exec_id)
            assert not client.describe(exec_id).paused

            forked = await client.fork(exec_id, from_step=2, workflow_id="T1-fork")
            await settled(served, forked, "ActivityCompleted")
            assert client.describe(forked).forked_from == exec_id
            assert RAN.count("one") == 1  # the fork took step 1's result

            with pytest.raises(InvalidResetPoint):
                await client.reset(exec_id, to_event=99, reason="x")
            new = await client.reset(exec_id, reason="again")
            assert client.describe(exec_id).state == "TERMINATED"
            assert client.describe(new).reset_from == exec_id

            everything = ExecutionFilter().workflow_name("ticks")
            assert await client.pause_many(everything, "hold") == 2  # new and forked
            assert await client.unpause_many(everything) == 2
            assert await client.signal_many(everything, "go", "ok") == 2
            for run in (new, forked):
                await settled(served, run, "WorkflowCompleted")
            assert client.outcome(new) == ExecutionOutcome.Completed(
                output=["one", "two", "ok"]
            )
            assert await client.cancel_many(everything, "x") == 0
            assert await client.terminate_many(everything, "x") == 0
            assert (
                await client.reset_many(
                    ExecutionFilter().workflow_id("none"), reason="x"
                )
                == 0
            )
            with pytest.raises(WorkflowNotRunning):
                await client.pause(new, "closed")
            with pytest.raises(TypeError):
                await client.pause_many("not a filter", "x")  # type: ignore[arg-type]


def test_a_filter_travels_as_json_and_back() -> None:
    flt = (
        ExecutionFilter()
        .workflow_name("w")
        .state("RUNNING", "FAILED")
        .workflow_id_prefix("K")
        .search_attribute("tier", 2)
        .paused(flag=False)
    )
    again = filter_from_json(filter_json(flt))
    assert again == flt


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


async def test_the_harvest_commands_reset_pause_and_act_in_bulk(
    served: ServedStore,
) -> None:
    rt = served.rt
    exec_id = str(rt.start_workflow_with_id("ticks", "C1", None))
    where = served.where
    async with served.serving():
        await settled(
            served,
            exec_id,
            "ActivityCompleted",
            "ActivityScheduled",
            "ActivityCompleted",
        )
        paused = await asyncio.to_thread(cli, "pause", where, exec_id, "hold on")
        assert paused.exit_code == 0, paused.output
        listed = await asyncio.to_thread(cli, "runs", where, "--paused")
        assert "RUNNING (paused)" in listed.output
        assert exec_id in listed.output
        unpaused = await asyncio.to_thread(cli, "unpause", where, exec_id)
        assert unpaused.exit_code == 0, unpaused.output

        reset = await asyncio.to_thread(
            cli, "reset", where, exec_id, "--reason", "retry"
        )
        assert reset.exit_code == 0, reset.output
        new = reset.output.split()[-1]
        assert str(rt.describe(new).reset_from) == exec_id
        bad = await asyncio.to_thread(
            cli, "reset", where, exec_id, "--to-event", "2", "--reason", "x"
        )
        assert bad.exit_code != 0
        assert "decision boundaries" in bad.output

        refused = await asyncio.to_thread(cli, "terminate-many", where, "--reason", "x")
        assert refused.exit_code == 2  # no filter and no --all
        many = await asyncio.to_thread(
            cli,
            "terminate-many",
            where,
            "--workflow",
            "ticks",
            "--state",
            "RUNNING",
            "--reason",
            "stop",
            "--json",
        )
        assert many.exit_code == 0, many.output
        assert json.loads(many.output) == {"terminated": 1}
        assert rt.describe(new).state == "TERMINATED"


def test_harvest_counts_and_show_say_what_is_paused(tmp_path: Path) -> None:
    path = tmp_path / "counts.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(ticks)
        runs = [rt.start_workflow("ticks", None) for _ in range(3)]
        rt.pause(runs[0], "audit")
    counts = cli("counts", str(path), "--json")
    assert json.loads(counts.output)["PAUSED"] == 1
    assert json.loads(counts.output)["RUNNING"] == 3
    shown = json.loads(cli("show", str(path), str(runs[0]), "--json").output)
    assert (shown["paused"], shown["pause_reason"]) == (True, "audit")
