"""Schedules on the runtime: upsert, pause, resume, delete, and firing due slots."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from harvest_engine import payloads
from harvest_engine.errors import HarvestError, HarvestInternalError, UnknownWorkflow
from harvest_engine.names import check_name
from harvest_engine.runtime.deciding.runs import start_run
from harvest_engine.runtime.talking import start_calls
from harvest_engine.schedules import (
    Overlap,
    WorkflowSchedule,
    schedule_id_prefix,
    schedule_workflow_id,
)
from harvest_engine.store.txn_protocol import WriteTxn

if TYPE_CHECKING:
    from harvest_engine.runtime.engine import Engine
    from harvest_engine.store.operations import ScheduleRow
    from harvest_engine.store.protocol import DurableStore

log = logging.getLogger("harvest_engine.schedules")

StartRun = Callable[[WriteTxn, str, str, str, datetime], str]
"""Start a run in the fire's transaction: (txn, workflow, id, input JSON, now) -> exec id."""


def upsert(
    store: DurableStore, schedule: WorkflowSchedule, now: datetime
) -> ScheduleRow:
    """Store a schedule; the same spec keeps its next slot, and the pause always stays.

    A new schedule, or one whose spec changed, counts its first slot from now.
    Safe to call on every open.
    """
    if not isinstance(schedule, WorkflowSchedule):
        raise TypeError(f"upsert_schedule takes a WorkflowSchedule, got {schedule!r}")
    name = schedule.workflow_name
    spec = payloads.dumps(schedule.schedule.to_json())
    with store.write() as txn:
        old = txn.schedule(name)
        same = (
            old is not None
            and old.schedule == schedule.schedule
            and old.problem is None
        )
        next_at = (
            old.next_fire_at
            if same and old is not None and old.next_fire_at is not None
            else schedule.schedule.next_after(now)
        )
        txn.put_schedule(
            workflow_name=name,
            spec=spec,
            input=payloads.check(schedule.input, "schedule input"),
            overlap=str(schedule.overlap),
            max_active_runs=schedule.max_active_runs,
            next_fire_at=next_at,
            paused=bool(old.paused) if old is not None else False,
            now=now,
        )
        row = txn.schedule(name)
    if row is None:
        raise HarvestInternalError(
            f"schedule {name!r} vanished inside its own transaction"
        )
    return row


def pause(store: DurableStore, workflow_name: str, now: datetime) -> bool:
    """Stop a schedule's fires; False when no schedule has this name."""
    check_name(workflow_name, "schedule name")
    with store.write() as txn:
        if txn.schedule(workflow_name) is None:
            return False
        txn.update_schedule(workflow_name, now, paused=True)
        return True


def resume(store: DurableStore, workflow_name: str, now: datetime) -> bool:
    """Fire again from the next slot after now (missed slots do not fire); False if unknown."""
    check_name(workflow_name, "schedule name")
    with store.write() as txn:
        row = txn.schedule(workflow_name)
        if row is None:
            return False
        if row.schedule is None:
            txn.update_schedule(workflow_name, now, paused=False)
        else:
            txn.update_schedule(
                workflow_name,
                now,
                paused=False,
                next_fire_at=row.schedule.next_after(now),
            )
        return True


def delete(store: DurableStore, workflow_name: str) -> bool:
    """Remove a schedule (its runs keep running); False when there was none."""
    check_name(workflow_name, "schedule name")
    with store.write() as txn:
        return txn.delete_schedule(workflow_name)


class CodeWaits:
    """Due schedules and held starts whose workflow this process has no code for: not woken for.

    Each `fire_due` pass records the due slots it found without code and
    warns only for a slot it had not seen; each release of held starts
    (`held_starts.release_due`) records the workflows of the due held starts
    it had to leave. `next_wakeup` looks past those schedules and held starts
    (a serving loop would otherwise find them due on every poll tick), and
    registering the workflow drops its entry (and wakes the loop), so the
    next round fires the slot or starts the run. They stay due in the store
    meanwhile: another worker that has the code takes them.
    """

    def __init__(self) -> None:
        self.slots: dict[str, datetime | None] = {}
        self.held: set[str] = set()

    def names(self) -> tuple[str, ...]:
        """The workflows waiting for their code, for `earliest_due` to skip."""
        return tuple(sorted(self.slots.keys() | self.held))

    def code_registered(self, name: str) -> None:
        """Workflow `name` has its code now: its schedule and held starts count again."""
        self.slots.pop(name, None)
        self.held.discard(name)


def fire_due(
    store: DurableStore,
    now: datetime,
    start: StartRun,
    registered: Callable[[str], bool],
    waits: CodeWaits | None = None,
) -> tuple[int, HarvestError | None]:
    """Fire every due schedule once, each in its own transaction.

    No catch-up: after a gap one run fires and the next slot counts from now.
    A ``skip`` schedule drops the slot while `max_active_runs` of its runs are
    RUNNING. An unregistered workflow or a damaged row only warns and keeps
    its slot due (an unregistered one warns once per slot, held in `waits`);
    any other error is returned after the pass.

    Returns:
        How many runs started, and the first error (or None).
    """
    started = 0
    first_error: HarvestError | None = None
    missing: dict[str, datetime | None] = {}
    seen = {} if waits is None else waits.slots
    for row in store.due_schedules(now):
        name = row.workflow_name
        if row.problem is not None or row.schedule is None:
            log.warning("schedule %r cannot fire: %s", name, row.problem)
            continue
        if row.input.is_unreadable:
            log.warning("schedule %r cannot fire: its stored input is unreadable", name)
            continue
        if not registered(name):
            missing[name] = row.next_fire_at
            if name not in seen or seen[name] != row.next_fire_at:
                log.warning(
                    "schedule %r is due but its workflow is not registered; "
                    "it fires once it is",
                    name,
                )
            continue
        try:
            started += _fire_one(store, name, now, start)
        except HarvestError as exc:
            first_error = first_error or exc
        except ValueError as exc:
            # The slot arithmetic of a damaged spec: warn, keep it due (guide §7).
            log.warning("schedule %r cannot fire: %s", name, exc)
    if waits is not None:
        waits.slots = missing
    return started, first_error


def _fire_one(store: DurableStore, name: str, now: datetime, start: StartRun) -> int:
    with store.write() as txn:
        row = txn.schedule(name)
        # Re-read inside the transaction: the row may have changed since the scan.
        if (
            row is None
            or row.paused
            or row.schedule is None
            or row.next_fire_at is None
            or row.next_fire_at > now
        ):
            return 0
        slot = row.next_fire_at
        following = row.schedule.next_after(now)
        if row.overlap == Overlap.SKIP.value:
            active = txn.active_schedule_runs(name, schedule_id_prefix(name), now)
            if active >= row.max_active_runs:
                log.info(
                    "schedule %r skips slot %s: %d run(s) still RUNNING",
                    name,
                    slot,
                    active,
                )
                txn.update_schedule(name, now, next_fire_at=following)
                return 0
        start(
            txn,
            name,
            schedule_workflow_id(name, slot),
            payloads.dumps(row.input.value),
            now,
        )
        txn.update_schedule(name, now, next_fire_at=following, last_fired_at=slot)
        return 1


def runtime_starter(engine: Engine) -> StartRun:
    """The StartRun of a runtime: its registered workflow's deadline and retry, started at `now`."""

    def start(
        txn: WriteTxn, name: str, workflow_id: str, input_json: str, now: datetime
    ) -> str:
        info = engine.registry.workflow(name)
        new = start_calls.new_execution(engine, name, workflow_id, input_json)
        if info.execution_timeout is not None:
            new = replace(new, deadline=now + info.execution_timeout)
        start_run(
            txn,
            new,
            now,
            advice_at=engine.settings.advice_at(),
            advice_bytes=engine.settings.advice_bytes(),
        )
        return new.exec_id

    return start


def is_registered(engine: Engine) -> Callable[[str], bool]:
    """Whether `rt` has a workflow of a name registered."""

    def check(name: str) -> bool:
        try:
            engine.registry.workflow(name)
        except UnknownWorkflow:
            return False
        return True

    return check
