"""The testing kit: WorkflowEnvironment skips time, mocks activities, restarts; the harvest_env plugin."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from textwrap import dedent

import pytest

from harvest_engine import (
    ActivityContext,
    ExecutionOutcome,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.errors import UnknownActivity
from harvest_engine.testing import WorkflowEnvironment

ROOT = Path(__file__).resolve().parents[2]
calls: list[str] = []


@activity
def greet(ctx: ActivityContext, name: str) -> str:
    calls.append(f"greet:{name}")
    return f"hello {name}"


@activity
def bill(ctx: ActivityContext, name: str) -> str:
    calls.append(f"bill:{name}")
    return f"billed {name}"


@workflow
async def monthly(ctx: WorkflowContext, name: str) -> str:
    await ctx.sleep("30d")
    return await ctx.execute_activity(greet, name)


@workflow
async def approval(ctx: WorkflowContext, name: str) -> str:
    approved = await ctx.wait_for_signal_timeout("approve", "1d")
    await ctx.sleep("30d")
    return f"{name} {'approved' if approved else 'expired'}"


@workflow
async def greet_then_bill(ctx: WorkflowContext, name: str) -> str:
    greeting = await ctx.execute_activity(greet, name)
    await ctx.sleep("1d")
    return f"{greeting}, {await ctx.execute_activity(bill, name)}"


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    calls.clear()


async def test_a_30_day_timer_completes_by_skipping_time(tmp_path: Path) -> None:
    async with WorkflowEnvironment.start(
        workflows=[monthly], activities=[greet], directory=tmp_path
    ) as env:
        began = env.clock.now()
        run = await env.client.start_workflow("monthly", "ada")
        outcome = await env.client.result(run, timeout="10s")
        assert outcome == ExecutionOutcome.Completed(output="hello ada")
        assert env.clock.now() - began == timedelta(days=30)


async def test_a_signal_before_its_deadline_wins_and_the_later_timer_still_skips() -> (
    None
):
    async with WorkflowEnvironment.start(workflows=[approval]) as env:
        began = env.clock.now()
        run = env.runtime.start_workflow("approval", "ada")
        env.runtime.send_signal(run, "approve", True)
        outcome = await env.client.result(run, timeout="10s")
        assert outcome == ExecutionOutcome.Completed(output="ada approved")
        assert env.clock.now() - began == timedelta(days=30)


async def test_without_auto_skipping_only_sleep_moves_time_and_a_late_signal_loses() -> (
    None
):
    async with WorkflowEnvironment.start(
        workflows=[approval], auto_time_skipping=False
    ) as env:
        early = env.runtime.start_workflow("approval", "early")
        late = env.runtime.start_workflow("approval", "late")
        await env.sleep("12h")
        assert env.runtime.describe(early).state == "RUNNING"
        env.runtime.send_signal(early, "approve", True)
        await env.sleep("12h")  # the deadline of `late` passes: it stops waiting
        env.runtime.send_signal(late, "approve", True)  # too late: its deadline fired
        await env.sleep("31d")
        assert env.runtime.outcome(early) == ExecutionOutcome.Completed(
            output="early approved"
        )
        assert env.runtime.outcome(late) == ExecutionOutcome.Completed(
            output="late expired"
        )


async def test_mock_activity_replaces_the_body_and_the_history_keeps_its_name() -> None:
    mocked: list[str] = []

    def fake_bill(ctx: ActivityContext, name: str) -> str:
        mocked.append(name)
        return f"free for {name}"

    async def fake_greet(ctx: ActivityContext, name: str) -> str:
        mocked.append(f"greet {name}")
        return f"hi {name}"

    async with WorkflowEnvironment.start(
        workflows=[greet_then_bill], activities=[greet, bill]
    ) as env:
        env.mock_activity(bill, fake_bill)
        env.mock_activity("greet", fake_greet)
        run = env.runtime.start_workflow("greet_then_bill", "ada")
        outcome = await env.client.result(run, timeout="10s")
        assert outcome == ExecutionOutcome.Completed(output="hi ada, free for ada")
        assert mocked == ["greet ada", "ada"]
        assert calls == []
        names = [
            e.attrs["name"]
            for e in env.runtime.load_history(run)
            if e.type == "ActivityCompleted"
        ]
        assert names == ["greet", "bill"]


async def test_restart_resumes_a_run_mid_flight_without_rerunning_done_work() -> None:
    async with WorkflowEnvironment.start(
        workflows=[greet_then_bill], activities=[greet, bill], auto_time_skipping=False
    ) as env:
        run = env.runtime.start_workflow("greet_then_bill", "ada")
        await env.sleep(0)
        assert calls == ["greet:ada"]
        first = env.runtime
        await env.restart()
        assert env.runtime is not first
        assert first.store_closed
        await env.sleep("1d")
        assert env.runtime.outcome(run) == ExecutionOutcome.Completed(
            output="hello ada, billed ada"
        )
        assert calls == ["greet:ada", "bill:ada"]


async def test_restart_reruns_an_activity_body_cut_off_mid_run() -> None:
    """The first attempt hangs (a crash mid-body); after the restart it runs again once."""
    started = asyncio.Event()

    async def hangs_once(ctx: ActivityContext, name: str) -> str:
        calls.append(f"greet:{name}")
        if len(calls) == 1:
            started.set()
            await asyncio.Event().wait()  # never returns: the restart cuts it off
        return f"hello again {name}"

    async with WorkflowEnvironment.start(
        workflows=[greet_then_bill], activities=[greet, bill]
    ) as env:
        env.mock_activity(greet, hangs_once)
        run = env.runtime.start_workflow("greet_then_bill", "ada")
        await asyncio.wait_for(started.wait(), 10)
        await env.restart()
        outcome = await env.client.result(run, timeout="10s")
        assert outcome == ExecutionOutcome.Completed(
            output="hello again ada, billed ada"
        )
        assert calls == ["greet:ada", "greet:ada", "bill:ada"]


async def test_a_mock_survives_a_restart() -> None:
    async with WorkflowEnvironment.start(
        workflows=[greet_then_bill], activities=[greet, bill], auto_time_skipping=False
    ) as env:
        env.mock_activity(bill, lambda ctx, name: f"mocked {name}")
        run = env.runtime.start_workflow("greet_then_bill", "ada")
        await env.sleep(0)
        await env.restart()
        await env.sleep("1d")
        assert env.runtime.outcome(run) == ExecutionOutcome.Completed(
            output="hello ada, mocked ada"
        )


async def test_mocking_an_activity_the_environment_lacks_is_a_typed_error() -> None:
    async with WorkflowEnvironment.start(
        workflows=[greet_then_bill], activities=[greet]
    ) as env:
        with pytest.raises(UnknownActivity, match="bill"):
            env.mock_activity("bill", lambda ctx, name: name)
        with pytest.raises(UnknownActivity, match="bill"):
            env.mock_activity(bill, lambda ctx, name: name)
        with pytest.raises(TypeError, match="activity"):
            env.mock_activity(monthly, lambda ctx, name: name)
        with pytest.raises(TypeError, match="callable"):
            env.mock_activity(greet, "not a function")  # type: ignore[arg-type]
        run = env.runtime.start_workflow("greet_then_bill", "ada")
        await env.sleep(0)
        assert calls == ["greet:ada"]  # the real body still runs: nothing changed
        assert env.runtime.describe(run).state == "RUNNING"


async def test_starting_with_a_workflow_as_an_activity_is_a_type_error(
    tmp_path: Path,
) -> None:
    with pytest.raises(TypeError, match="activity"):
        async with WorkflowEnvironment.start(activities=[monthly], directory=tmp_path):
            pass
    assert not (tmp_path / "harvest-test.db").exists()


async def test_a_negative_sleep_is_refused() -> None:
    async with WorkflowEnvironment.start() as env:
        with pytest.raises(ValueError, match="negative"):
            await env.sleep(timedelta(seconds=-1))


def test_the_harvest_env_fixture_runs_an_async_test_in_plain_pytest(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_user.py").write_text(
        dedent(
            """
            from datetime import timedelta

            from harvest_engine import ExecutionOutcome, WorkflowContext, workflow


            @workflow
            async def yearly(ctx: WorkflowContext, n: int) -> int:
                await ctx.sleep("365d")
                return n + 1


            async def test_yearly(harvest_env, tmp_path):
                async with harvest_env(workflows=[yearly]) as env:
                    assert env.path.is_relative_to(tmp_path)
                    run = env.runtime.start_workflow("yearly", 41)
                    outcome = await env.client.result(run, timeout="10s")
                    assert outcome == ExecutionOutcome.Completed(output=42)
            """
        )
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "harvest_engine.testing.plugin"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
