"""Frozen records of the operator reads: stored schedules and per-run LLM ledger totals."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from harvest_engine.schedules import Schedule
from harvest_engine.store.records import Stored


@dataclass(frozen=True)
class ScheduleRow:
    """A stored schedule, as `list_schedules` returns it.

    Attributes:
        workflow_name: the key: one schedule per workflow.
        schedule: the parsed spec, or None when the stored spec is damaged
            (then `problem` says why and the schedule never fires).
        input: the input each run starts with.
        overlap: ``"skip"`` or ``"allow_all"``.
        max_active_runs: how many RUNNING runs a ``skip`` schedule tolerates.
        next_fire_at: the next slot, or None when damaged.
        paused: paused schedules do not fire.
        last_fired_at: the slot of the last run started (None before any).
        created_at: when the schedule was first stored.
        updated_at: when it was last upserted, paused or resumed.
        problem: why the row cannot fire, or None.
    """

    workflow_name: str
    schedule: Schedule | None
    input: Stored
    overlap: str
    max_active_runs: int
    next_fire_at: datetime | None
    paused: bool
    last_fired_at: datetime | None
    created_at: datetime | None
    updated_at: datetime | None
    problem: str | None = None


@dataclass(frozen=True)
class LedgerTotals:
    """A run's LLM ledger summed: calls, tokens in and out, and recorded latency."""

    calls: int
    input_tokens: int
    output_tokens: int
    latency: float
