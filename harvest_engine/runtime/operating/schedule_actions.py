"""Firing a schedule by hand: trigger one run now, or backfill the slots of a past range."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING

from harvest_engine import payloads
from harvest_engine.errors import HarvestInternalError, ScheduleNotFound
from harvest_engine.schedules import (
    Overlap,
    schedule_id_prefix,
    schedule_workflow_id,
    slots_between,
)

if TYPE_CHECKING:
    from harvest_engine.runtime.operating.schedules import StartRun
    from harvest_engine.store.operations import ScheduleRow
    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.store.txn_protocol import WriteTxn


def trigger(
    store: DurableStore, name: str, now: datetime, start: StartRun
) -> str | None:
    """Start one run of the schedule now, in one transaction; None when its overlap policy skips.

    The run's workflow id is the slot id of `now` plus a unique tail, so two
    triggers in the same second are two runs. The schedule's own slots are
    left as they were; a paused schedule can still be triggered.

    Raises:
        ScheduleNotFound: no schedule for `name`.
        UnknownWorkflow: the workflow is not registered.
    """
    with store.write() as txn:
        row = _row(txn, name)
        if _skips(txn, row, now):
            return None
        workflow_id = (
            f"{schedule_workflow_id(name, now)}:trigger-{uuid.uuid4().hex[:12]}"
        )
        return start(txn, name, workflow_id, _input(row), now)


def backfill(
    store: DurableStore,
    name: str,
    start_at: datetime,
    end_at: datetime,
    now: datetime,
    start: StartRun,
) -> list[str]:
    """Start a run for each slot in [start_at, end_at], oldest first, in one transaction.

    Each run gets its slot's own workflow id (``sched:<workflow>:<slot>``);
    a slot that already has a run (fired before, or an earlier backfill) is
    not started again, and a ``skip`` schedule drops slots while
    `max_active_runs` of its runs are RUNNING, as its fires do.

    Raises:
        ScheduleNotFound: no schedule for `name`.
        UnknownWorkflow: the workflow is not registered.
        ValueError: naive times, `end_at` before `start_at`, a damaged
            spec, or more than 1,000 slots in the range.
    """
    for what, when in (("start", start_at), ("end", end_at)):
        if not isinstance(when, datetime) or when.tzinfo is None:
            raise ValueError(
                f"backfill_schedule {what} is an aware datetime, got {when!r}"
            )
    if end_at < start_at:
        raise ValueError("backfill_schedule end is before its start")
    started: list[str] = []
    with store.write() as txn:
        row = _row(txn, name)
        if row.schedule is None:
            raise ValueError(f"schedule {name!r} cannot fire: {row.problem}")
        for slot in _slots(row, start_at, end_at):
            workflow_id = schedule_workflow_id(name, slot)
            if txn.runs_of_key(name, workflow_id) or _skips(txn, row, now):
                continue
            started.append(start(txn, name, workflow_id, _input(row), now))
    return started


def _row(txn: WriteTxn, name: str) -> ScheduleRow:
    row = txn.schedule(name) if isinstance(name, str) else None
    if row is None:
        raise ScheduleNotFound(workflow_name=str(name))
    return row


def _input(row: ScheduleRow) -> str:
    if row.input.is_unreadable:
        raise HarvestInternalError(
            f"schedule {row.workflow_name!r} has an unreadable stored input; upsert it again"
        )
    return payloads.dumps(row.input.value)


def _skips(txn: WriteTxn, row: ScheduleRow, now: datetime) -> bool:
    """Whether a ``skip`` schedule has its `max_active_runs` RUNNING now."""
    if row.overlap != Overlap.SKIP.value:
        return False
    name = row.workflow_name
    active = txn.active_schedule_runs(name, schedule_id_prefix(name), now)
    return active >= row.max_active_runs


def _slots(row: ScheduleRow, start_at: datetime, end_at: datetime) -> list[datetime]:
    """The schedule's slots from `start_at` to `end_at`, both included."""
    assert row.schedule is not None  # noqa: S101 -- checked by the caller
    return slots_between(row.schedule, start_at, end_at)
