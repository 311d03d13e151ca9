"""A client command retried with its command id is applied once, on both stores.

`CommandTimedOut` leaves the command queued; calling again used to queue a
second one (a signal delivered twice). Repeating the call with
``command_id=`` (the timed-out command's, or the caller's own key) queues
nothing new and awaits the first command's reply.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from harvest_engine import (
    CommandTimedOut,
    ExecutionOutcome,
    InvalidName,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.cli.app import main
from harvest_engine.runtime.serving import commands
from tests.engine.served_store import ServedStore, served_store

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@workflow
async def counter(ctx: WorkflowContext, start: int) -> int:
    total = start
    while True:
        step = await ctx.wait_for_signal("add")
        if step is None:
            return total
        total += step


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServedStore]:
    for found in served_store(request, tmp_path):
        found.rt.register_workflow(counter)
        yield found


def queued(target: ServedStore) -> list[tuple[Any, ...]]:
    """(kind, args) of every queued or applied command, oldest first."""
    return target.rows("SELECT kind, args FROM harvest_commands ORDER BY id")


async def test_a_signal_retried_with_its_command_id_after_timeouts_is_applied_once(
    target: ServedStore,
) -> None:
    exec_id = target.rt.start_workflow("counter", 1)
    with target.client() as client:
        with pytest.raises(CommandTimedOut) as first:
            await client.send_signal(exec_id, "add", 2, timeout="50ms")
        key = first.value.command_id
        with pytest.raises(CommandTimedOut) as again:
            await client.send_signal(exec_id, "add", 2, timeout="50ms", command_id=key)
        assert again.value.command_id == key
        assert len(queued(target)) == 1
        async with target.serving():
            await client.send_signal(exec_id, "add", 2, timeout="5s", command_id=key)
            await client.send_signal(exec_id, "add", None, timeout="5s")
            outcome = await client.result(exec_id, timeout="5s")
    assert outcome == ExecutionOutcome.Completed(output=3)
    assert [kind for kind, _ in queued(target)] == ["send_signal", "send_signal"]


async def test_a_start_repeated_with_its_command_id_returns_the_run_it_started(
    target: ServedStore,
) -> None:
    with target.client() as client:
        async with target.serving():
            first = await client.start_workflow("counter", 5, command_id="order-17")
            second = await client.start_workflow("counter", 5, command_id="order-17")
            other = await client.start_workflow("counter", 5)
        assert first == second != other
        assert len(client.list_executions().executions) == 2


async def test_a_command_id_naming_another_command_is_refused_and_queues_nothing(
    target: ServedStore,
) -> None:
    exec_id = target.rt.start_workflow("counter", 0)
    with target.client() as client:
        async with target.serving():
            await client.send_signal(exec_id, "add", 2, command_id="k")
            with pytest.raises(ValueError, match="already names another command"):
                await client.send_signal(exec_id, "add", 3, command_id="k")
            with pytest.raises(ValueError, match="already names another command"):
                await client.cancel(exec_id, command_id="k")
            with pytest.raises(InvalidName, match="command id"):
                await client.send_signal(exec_id, "add", 3, command_id="  ")
            with pytest.raises(InvalidName, match="command id"):
                await client.send_signal(exec_id, "add", 3, command_id=7)  # type: ignore[arg-type]
        assert len(queued(target)) == 1
        assert [e.type for e in client.load_history(exec_id)].count(
            "SignalReceived"
        ) == 1


def test_the_harvest_command_prints_the_id_to_retry_with_and_applies_a_retry_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cli.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(counter)
        exec_id = str(rt.start_workflow("counter", 1))
        signal = ["signal", str(path), exec_id, "add", "2"]
        timed_out = CliRunner().invoke(main, [*signal, "--timeout", "50ms"])
        assert timed_out.exit_code == 8
        retry_with = timed_out.output.strip().rsplit(" ", 1)[-1]
        assert f"--command-id {retry_with}" in timed_out.output
        again = CliRunner().invoke(
            main, [*signal, "--timeout", "50ms", "--command-id", retry_with]
        )
        assert again.exit_code == 8
        commands.apply_pending(rt._engine)  # a serving process applies the queue
        retried = CliRunner().invoke(main, [*signal, "--command-id", retry_with])
        assert retried.exit_code == 0, retried.output
        asyncio.run(rt.run_until_idle())
        received = [
            e.attrs["payload"]
            for e in rt.load_history(exec_id)
            if e.type == "SignalReceived"
        ]
    assert received == [2]
