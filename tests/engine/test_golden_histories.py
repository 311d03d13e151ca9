"""Golden histories (tests/golden/*.json) keep replaying, and their encoding stays frozen.

A history recorded by an earlier version of harvest must replay against
today's code with `WorkflowReplayer`. A workflow changed in a way that
breaks replay must raise NonDeterminismDetected naming the recorded and the
expected command. To re-record on purpose: ``python -m tests.golden.regenerate``.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ExecutionId,
    NonDeterminismDetected,
    WorkflowContext,
    WorkflowReplayer,
    workflow,
)
from tests.golden import regenerate
from tests.golden.workflows import SCENARIOS, WORKFLOWS, Order, Scenario, charge, ship

if TYPE_CHECKING:
    from pathlib import Path

SCENARIO_IDS = [s.name for s in SCENARIOS]


def golden_text(scenario: Scenario) -> str:
    """The committed history file of a scenario."""
    return regenerate.path_of(scenario).read_text()


def test_every_golden_file_belongs_to_a_scenario() -> None:
    on_disk = sorted(p.stem for p in regenerate.GOLDEN_DIR.glob("*.json"))
    assert on_disk == sorted(SCENARIO_IDS)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=SCENARIO_IDS)
def test_a_golden_history_replays_against_todays_code(scenario: Scenario) -> None:
    history = regenerate.decode(golden_text(scenario))

    result = WorkflowReplayer(WORKFLOWS).replay(history)

    assert result.workflow_name == scenario.workflow.info.name
    assert result.closed
    assert result.events == len(history)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=SCENARIO_IDS)
def test_a_golden_history_also_replays_from_its_json_text(scenario: Scenario) -> None:
    text = json.dumps(json.loads(golden_text(scenario)))
    assert WorkflowReplayer(WORKFLOWS).replay(text).closed


@pytest.mark.parametrize("scenario", SCENARIOS, ids=SCENARIO_IDS)
def test_the_event_encoding_of_a_golden_history_is_unchanged(
    scenario: Scenario,
) -> None:
    text = golden_text(scenario)
    assert regenerate.encode(regenerate.decode(text)) == text


@pytest.mark.parametrize("scenario", SCENARIOS, ids=SCENARIO_IDS)
def test_recording_a_golden_scenario_today_gives_the_committed_bytes(
    scenario: Scenario, tmp_path: Path
) -> None:
    recorded = regenerate.encode(
        asyncio.run(regenerate.record(scenario, tmp_path / "g.db"))
    )
    assert recorded == golden_text(scenario), (
        "the engine now records this scenario differently; if that is deliberate, "
        "run `python -m tests.golden.regenerate` and review the diff"
    )


def test_the_golden_set_covers_the_failed_run_and_every_primitive() -> None:
    types = {
        event.type
        for scenario in SCENARIOS
        for event in regenerate.decode(golden_text(scenario))
    }
    assert {
        "ActivityScheduled",
        "ActivityCompleted",
        "ActivityFailed",
        "SignalReceived",
        "TimerStarted",
        "TimerFired",
        "TimerCancelled",
        "SideEffectRecorded",
        "WorkflowCompleted",
        "WorkflowFailed",
    } <= types
    retried = regenerate.decode(golden_text(SCENARIOS[SCENARIO_IDS.index("retries")]))
    assert any(
        e.attrs.get("attempt") == 3 for e in retried if e.type == "ActivityCompleted"
    )


# -- a changed workflow is caught -------------------------------------------------
# Each is registered under a golden workflow's name, as an edited version of it.


@workflow(name="golden_activities")
async def activities_reordered(ctx: WorkflowContext, order: Order) -> str:
    """Ships before it charges."""
    shipped = await ctx.execute_activity(ship, order)
    charged = await ctx.execute_activity(charge, order)
    return f"{charged}; parcel {shipped['parcel']}"


@workflow(name="golden_activities")
async def activities_with_a_new_timer(ctx: WorkflowContext, order: Order) -> str:
    """Waits before charging."""
    await ctx.sleep("1s")
    charged = await ctx.execute_activity(charge, order)
    shipped = await ctx.execute_activity(ship, order)
    return f"{charged}; parcel {shipped['parcel']}"


@workflow(name="golden_activities")
async def activities_with_another_result(ctx: WorkflowContext, order: Order) -> str:
    """Same commands, different output."""
    await ctx.execute_activity(charge, order)
    await ctx.execute_activity(ship, order)
    return "done"


@workflow(name="golden_timers")
async def timers_renamed(ctx: WorkflowContext, _: Any) -> list[str]:
    """Names its cancelled timer differently."""
    await ctx.sleep("5m")
    doomed = ctx.start_timer("renamed", "1h")
    reminder = ctx.start_timer("reminder", "30s")
    await reminder.await_fire()
    doomed.cancel()
    return []


def replay_golden(changed: Any, name: str) -> NonDeterminismDetected:
    """Replay golden history `name` against a changed workflow; the divergence raised."""
    scenario = SCENARIOS[SCENARIO_IDS.index(name)]
    others = [wf for wf in WORKFLOWS if wf.info.name != changed.info.name]
    with pytest.raises(NonDeterminismDetected) as caught:
        WorkflowReplayer([changed, *others]).replay(
            regenerate.decode(golden_text(scenario))
        )
    return caught.value


def test_reordered_activities_name_the_recorded_and_the_expected_command() -> None:
    error = replay_golden(activities_reordered, "activities")

    assert error.seq == 2  # type: ignore[attr-defined]
    assert "ActivityScheduled(activity_id=1, name='charge')" in error.recorded  # type: ignore[attr-defined]
    assert "ActivityScheduled(activity_id=1, name='ship')" in error.expected  # type: ignore[attr-defined]
    assert error.recorded in str(error)  # type: ignore[attr-defined]
    assert error.expected in str(error)  # type: ignore[attr-defined]
    assert error.exec_id == ExecutionId("golden-activities")  # type: ignore[attr-defined]


def test_a_new_timer_before_a_recorded_activity_is_caught_at_that_activity() -> None:
    error = replay_golden(activities_with_a_new_timer, "activities")

    assert error.seq == 2  # type: ignore[attr-defined]
    assert "ActivityScheduled" in error.recorded  # type: ignore[attr-defined]
    assert "TimerStarted" in error.expected  # type: ignore[attr-defined]


def test_a_changed_result_is_caught_at_the_recorded_completion() -> None:
    error = replay_golden(activities_with_another_result, "activities")

    assert error.seq == 6  # type: ignore[attr-defined]
    assert "WorkflowCompleted" in error.recorded  # type: ignore[attr-defined]
    assert '"done"' in error.expected  # type: ignore[attr-defined]


def test_a_renamed_timer_is_caught_naming_both_timer_ids() -> None:
    error = replay_golden(timers_renamed, "timers")

    assert error.seq == 4  # type: ignore[attr-defined]
    assert "timer_id='doomed'" in error.recorded  # type: ignore[attr-defined]
    assert "timer_id='renamed'" in error.expected  # type: ignore[attr-defined]


@workflow(name="golden_activities")
async def activities_without_shipping(ctx: WorkflowContext, order: Order) -> str:
    """Drops the second activity."""
    return str(await ctx.execute_activity(charge, order))


def test_a_removed_activity_is_caught_at_its_recorded_schedule() -> None:
    error = replay_golden(activities_without_shipping, "activities")

    assert error.seq == 4  # type: ignore[attr-defined]
    assert "ActivityScheduled(activity_id=2, name='ship')" in error.recorded  # type: ignore[attr-defined]
    assert "no command" in error.expected  # type: ignore[attr-defined]
