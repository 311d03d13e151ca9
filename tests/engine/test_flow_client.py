"""Queues from another process, on both stores: client.queues(), starts into a queue, the CLI."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from harvest_engine import (
    DuplicateEnqueue,
    ExecutionOutcome,
    InvalidFlowOption,
    Queue,
    Rate,
    StartOptions,
    WorkflowContext,
    workflow,
)
from harvest_engine.cli.app import main
from tests.engine.served_store import ServedStore, served_store

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@workflow
async def held(ctx: WorkflowContext, name: Any) -> Any:
    await ctx.wait_for_signal("done")
    return name


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServedStore]:
    for found in served_store(request, tmp_path):
        found.rt.register_workflow(held)
        found.rt.register_queue(
            Queue("llm", concurrency=1, rate=Rate(60, "1m"), priority=True)
        )
        yield found


async def test_a_client_starts_into_a_queue_and_reads_it(target: ServedStore) -> None:
    async with target.serving():
        with target.client() as client:
            first = await client.start_workflow_with_options(
                "held", "a", StartOptions(queue="llm", dedup_id="a")
            )
            second = await client.start_workflow_with_options(
                "held", "b", StartOptions(queue="llm", priority=3)
            )
            with pytest.raises(DuplicateEnqueue) as caught:
                await client.start_workflow_with_options(
                    "held", "again", StartOptions(queue="llm", dedup_id="a")
                )
            assert caught.value.exec_id == first.exec_id  # type: ignore[attr-defined]
            with pytest.raises(InvalidFlowOption):  # refused before anything is queued
                StartOptions(queue="llm", priority=-3).flow  # noqa: B018
            for _ in range(200):
                if client.describe(first.exec_id).state == "RUNNING":
                    break
                await asyncio.sleep(0.01)
            assert client.outcome(second.exec_id) == ExecutionOutcome.Enqueued("llm")
            [info] = client.queues()
            assert (info.name, info.running, info.waiting) == ("llm", 1, 1)
            assert info.rate == Rate(60, 60.0)


async def test_harvest_queues_and_harvest_start_into_a_queue(
    target: ServedStore,
) -> None:
    where = target.where
    async with target.serving():
        started = await asyncio.to_thread(
            CliRunner().invoke,
            main,
            ["start", where, "held", '"x"', "--queue", "llm", "--timeout", "20s"],
        )
        assert started.exit_code == 0, started.output
        exec_id = started.output.strip()
        queued = await asyncio.to_thread(
            CliRunner().invoke,
            main,
            ["start", where, "held", '"y"', "--queue", "llm", "--priority", "-1"],
        )
        assert queued.exit_code != 0
        assert "priority" in queued.output
    table = CliRunner().invoke(main, ["queues", where])
    assert table.exit_code == 0, table.output
    assert "llm" in table.output
    assert "60/60s" in table.output
    listed = CliRunner().invoke(main, ["queues", where, "--json"])
    [info] = json.loads(listed.output)
    assert (info["name"], info["concurrency"], info["running"]) == ("llm", 1, 1)
    counts = json.loads(CliRunner().invoke(main, ["counts", where, "--json"]).output)
    assert counts["RUNNING"] == 1
    assert counts["ENQUEUED"] == 0
    shown = CliRunner().invoke(main, ["runs", where, "--state", "RUNNING"])
    assert exec_id in shown.output
