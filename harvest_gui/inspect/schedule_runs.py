"""A schedule's runs and a backfill's slots, as the Schedules page previews them (no Qt)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from harvest_engine import ExecutionFilter, next_fire_times

if TYPE_CHECKING:
    from harvest_engine import ExecutionSummary

MAX_BACKFILL_SLOTS = 1000
"""The engine starts at most this many slots in one backfill (schedule_actions)."""
RECENT_RUNS = 20
"""How many of a schedule's runs the page lists, newest first."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def run_prefix(workflow_name: str) -> str:
    """The workflow-id prefix of every run a schedule started (fired, triggered or backfilled)."""
    return f"sched:{workflow_name}:"


def slot_workflow_id(workflow_name: str, slot: datetime) -> str:
    """The workflow id the engine gives a slot's run: ``sched:<workflow>:<slot epoch seconds>``."""
    return f"{run_prefix(workflow_name)}{math.floor((slot - _EPOCH).total_seconds())}"


def recent_runs(
    reader: Any, workflow_name: str, n: int = RECENT_RUNS
) -> list[ExecutionSummary]:
    """The schedule's latest `n` runs, newest first (runs of its workflow under its id prefix)."""
    flt = (
        ExecutionFilter()
        .workflow_name(workflow_name)
        .workflow_id_prefix(run_prefix(workflow_name))
        .limit(n)
    )
    return list(reader.list_executions(flt).executions)


@dataclass(frozen=True)
class BackfillPreview:
    """The slots a backfill of [start, end] would start, and those it would pass over."""

    slots: list[datetime]
    """Every slot in the range, oldest first."""
    taken: set[datetime]
    """Slots that already have a run (the engine skips them)."""
    error: str | None = None
    """Why the range cannot be backfilled (nothing else is then set)."""

    @property
    def to_start(self) -> list[datetime]:
        """The slots that would get a run (a ``skip`` schedule may still drop some)."""
        return [s for s in self.slots if s not in self.taken]


def skip_hold(reader: Any, row: Any) -> str | None:
    """Why a ``skip`` schedule drops slots now: `max_active_runs` of its runs are RUNNING."""
    if str(row.overlap) != "skip":
        return None
    flt = (
        ExecutionFilter()
        .workflow_name(row.workflow_name)
        .workflow_id_prefix(run_prefix(row.workflow_name))
        .state("RUNNING")
        .limit(max(1, row.max_active_runs))
    )
    active = len(reader.list_executions(flt).executions)
    if active < row.max_active_runs:
        return None
    return (
        f"its overlap policy is skip and {active} of its runs "
        f"(max active runs {row.max_active_runs}) are running, so it starts none "
        "until they end"
    )


def backfill_preview(
    reader: Any, workflow_name: str, schedule: Any, start: datetime, end: datetime
) -> BackfillPreview:
    """What `backfill_schedule(workflow_name, start, end)` would start, read without writing."""
    if schedule is None:
        return BackfillPreview([], set(), "the schedule's stored spec is damaged")
    if end < start:
        return BackfillPreview([], set(), "the end is before the start")
    slots = [
        s
        for s in next_fire_times(
            schedule, start - timedelta(microseconds=1), MAX_BACKFILL_SLOTS + 1
        )
        if s <= end
    ]
    if len(slots) > MAX_BACKFILL_SLOTS:
        return BackfillPreview(
            [],
            set(),
            f"more than {MAX_BACKFILL_SLOTS:,} slots in the range; split it",
        )
    ids = {slot_workflow_id(workflow_name, s): s for s in slots}
    taken: set[datetime] = set()
    if ids:
        flt = (
            ExecutionFilter()
            .workflow_name(workflow_name)
            .workflow_id_prefix(run_prefix(workflow_name))
            .limit(MAX_BACKFILL_SLOTS)
        )
        for run in reader.list_executions(flt).executions:
            if run.workflow_id in ids:
                taken.add(ids[run.workflow_id])
    return BackfillPreview(slots, taken)
