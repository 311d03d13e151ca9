"""Golden histories of the lifecycle events replay today and keep their recorded bytes."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from harvest_engine import WorkflowReplayer
from tests.golden import lifecycle_scenarios as golden
from tests.golden.regenerate import decode, encode

if TYPE_CHECKING:
    from pathlib import Path

NAMES = sorted(golden.SCENARIOS)


def test_every_lifecycle_golden_file_belongs_to_a_scenario() -> None:
    assert sorted(p.stem for p in golden.FOLDER.glob("*.json")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_a_lifecycle_golden_history_replays_against_todays_code(name: str) -> None:
    history = decode(golden.path_of(name).read_text())

    result = WorkflowReplayer(golden.WORKFLOWS).replay(history)

    assert result.closed
    assert result.events == len(history)


@pytest.mark.parametrize("name", NAMES)
def test_recording_a_lifecycle_scenario_today_gives_the_committed_bytes(
    name: str, tmp_path: Path
) -> None:
    recorded = encode(asyncio.run(golden.record(name, tmp_path / "g.db")))
    assert recorded == golden.path_of(name).read_text(), (
        "the engine now records this scenario differently; if that is deliberate, run "
        "`python -m tests.golden.lifecycle_scenarios` and review the diff"
    )


def test_the_lifecycle_goldens_cover_every_new_event_type() -> None:
    types = {
        event.type
        for name in NAMES
        for event in decode(golden.path_of(name).read_text())
    }
    assert {
        "WorkflowCancelled",
        "WorkflowContinuedAsNew",
        "WorkflowExecutionTimedOut",
        "WorkflowRetryScheduled",
        "MutexRequested",
        "MutexGranted",
        "MutexReleased",
        "LocalActivityScheduled",
        "LocalActivityCompleted",
        "LocalActivityFailed",
        "LocalActivityExhausted",
        "ChildWorkflowStarted",
        "ChildWorkflowCompleted",
        "ChildWorkflowFailed",
        "ExternalSignalSent",
        "ExternalCancelRequested",
        "ExternalWorkflowAwaited",
        "ExternalWorkflowCompleted",
        "ExternalWorkflowFailed",
    } <= types


def test_a_cancel_seal_failure_is_frozen_with_the_worker_failure_shape() -> None:
    events = decode(golden.path_of("cancel_sealed").read_text())
    sealed = [e for e in events if e.type == "ActivityFailed"]

    assert [e.attrs["error"]["type"] for e in sealed] == ["CancelSealed"]
    assert set(sealed[0].attrs) == {"activity_id", "name", "error", "attempt"}
    assert events[-1].type == "WorkflowCancelled"
