"""A client's start is applied and its new run first decided in one transaction (both stores).

The serving loop used to commit the start, then decide the new run in a
round of its own: a second commit, and a signal the client sends right after
the start waited behind it (on a file, for the write lock). Now the run's
first decision runs in a savepoint of the start command's transaction, as a
signal's does (`commands.started_run`). A start that attached to a running
run, or a held start (debounce), decides nothing there. A run so decided
and parked with no work leaves the serving loop nothing: it makes no pass.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ExecutionOutcome,
    ManualClock,
    StartOptions,
    WorkflowContext,
    workflow,
)
from harvest_engine.calls import WorkflowIdReusePolicy
from harvest_engine.runtime.serving import commands
from harvest_engine.runtime.serving.server import Server
from tests.engine.served_store import ServedStore, served_store

if TYPE_CHECKING:
    from collections.abc import Awaitable, Iterator
    from pathlib import Path

    from harvest_engine.errors import HarvestError


@workflow
async def parks(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("go")


@workflow(debounce=timedelta(seconds=30))
async def debounced(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("go")


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServedStore]:
    for found in served_store(request, tmp_path, clock=ManualClock()):
        found.rt.register_workflow(parks)
        found.rt.register_workflow(debounced)
        yield found


async def _applied(served: ServedStore, call: Awaitable[Any]) -> tuple[Any, int]:
    """Queue the client's command, apply it as the serving loop does: (its result, commits)."""
    commits: list[int] = []
    remove = served.rt.store.add_commit_listener(lambda: commits.append(1))
    task = asyncio.ensure_future(call)
    for _ in range(500):
        if served.rows("SELECT 1 FROM harvest_commands WHERE applied_at IS NULL"):
            break
        await asyncio.sleep(0.002)
    assert commands.apply_pending(served.rt._engine, decide=True) == 1  # noqa: SLF001
    remove()
    return await asyncio.wait_for(task, 5), len(commits)


def _waiting(served: ServedStore, exec_id: object) -> list[tuple[Any, ...]]:
    """The run's state and its decision flag (1: a decision is still due)."""
    return served.rows(
        f"SELECT state, needs_decision FROM harvest_executions WHERE exec_id = '{exec_id}'"
    )


async def test_a_started_run_is_first_decided_in_the_starts_commit(
    served: ServedStore,
) -> None:
    with served.client() as client:
        exec_id, commits = await _applied(served, client.start_workflow("parks"))
        assert commits == 1  # the start, its reply and the first decision
        assert _waiting(served, exec_id) == [("RUNNING", 0)]
        opts = StartOptions(workflow_id="w")
        started, _ = await _applied(
            served, client.start_workflow_with_options("parks", None, opts)
        )
        assert started.started_fresh
        assert _waiting(served, started.exec_id) == [("RUNNING", 0)]


async def test_an_attached_or_held_start_decides_nothing_in_its_commit(
    served: ServedStore,
) -> None:
    with served.client() as client:
        first = served.rt.start_workflow_with_id("parks", "w", None)
        attached, _ = await _applied(
            served,
            client.start_workflow_with_reuse_policy(
                "parks", "w", None, WorkflowIdReusePolicy.ALLOW_DUPLICATE
            ),
        )
        assert not attached.started_fresh
        assert attached.exec_id == first
        assert _waiting(served, first) == [("RUNNING", 1)]  # the loop's
        held, _ = await _applied(served, client.start_workflow("debounced"))
        assert (
            served.rows(f"SELECT 1 FROM harvest_executions WHERE exec_id = '{held}'")
            == []
        )


async def test_a_start_its_transaction_parked_leaves_the_run_loop_asleep(
    served: ServedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing is left for a pass: the serving loop makes none, and idles for the next command."""
    rounds: list[int] = []
    real = Server._round

    async def counted(self: Server) -> tuple[bool, list[HarvestError]]:
        rounds.append(1)
        return await real(self)

    monkeypatch.setattr(Server, "_round", counted)
    with served.client() as client:
        async with served.serving():
            await asyncio.sleep(0.2)  # the first rounds of the serve
            rounds.clear()
            exec_id = await client.start_workflow("parks", timeout="5s")
            await asyncio.sleep(0.2)
            assert rounds == []
            assert _waiting(served, exec_id) == [("RUNNING", 0)]
            await client.send_signal(exec_id, "go", 3, timeout="5s")  # it ends: a pass
            await asyncio.sleep(0.2)
            assert rounds != []


@workflow(execution_timeout="300ms")
async def parks_briefly(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("go")


@pytest.fixture(params=["sqlite", "postgres"])
def timed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServedStore]:
    for found in served_store(request, tmp_path):  # the system clock
        found.rt.register_workflow(parks_briefly)
        yield found


async def test_a_resting_starts_deadline_still_ends_its_run(timed: ServedStore) -> None:
    """No pass follows the start, yet the loop reads its next due time again: the deadline."""
    with timed.client() as client:
        async with timed.serving():
            exec_id = await client.start_workflow("parks_briefly", timeout="5s")
            outcome = await client.result(exec_id, timeout="10s")
    assert outcome == ExecutionOutcome.Terminated(state="TIMED_OUT")
