"""The runtime's drivers: drive one run, every run, or serve the file until stopped.

They are `SqliteRuntime` methods, written here so the facade stays a short
table of its surface; the class binds each function as its method (no extra
call layer on the drive path).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harvest_engine.errors import HarvestError, Stuck
from harvest_engine.runtime import drive_targets as children_drive
from harvest_engine.runtime import schedules, serving
from harvest_engine.runtime.drive_time import DriveTime
from harvest_engine.states import ExecutionId, RunState

if TYPE_CHECKING:
    from harvest_engine.clock import Clock
    from harvest_engine.durations import Duration
    from harvest_engine.runtime.cycle import Decision
    from harvest_engine.runtime.runtime import SqliteRuntime

# One drive call gives each run at most this many cycles, so a body that
# loops over activities forever cannot hold the caller for ever.
CYCLE_BUDGET = 100_000

Now = Callable[[], datetime]

# How many runs' activity tasks one pass runs at the same time.
TASK_CONCURRENCY = 8


async def run_until_blocked(
    self: SqliteRuntime, exec_id: str | ExecutionId
) -> RunState:
    """Drive one run until it ends or waits on outside input; its RunState.

    A run parked in `await_condition` whose registered signal handlers
    could make the condition true reports `RunState.WaitingSignal`
    naming those handlers.

    Raises:
        ExecutionNotFound: no run has that id.
        Stuck: the run is parked on nothing that can ever move it (no
            signal, timer, task, run, mutex or signal handler).
        NonDeterminismDetected / WorkflowPanicked: the code no longer
            replays, or raised a bug; the run stays RUNNING.
    """
    # The decision's own read of the row answers whether the run exists.
    return await self._run_until_blocked(self._id_text(exec_id), self.clock.now)


async def run_until_blocked_as_of(
    self: SqliteRuntime, exec_id: str | ExecutionId, when: datetime
) -> RunState:
    """`run_until_blocked` with every clock read at `when` (an aware datetime)."""
    fixed = _fixed(when, self.clock)
    return await self._run_until_blocked(self._id_text(exec_id), fixed)


async def run_until_idle(self: SqliteRuntime) -> None:
    """Drive every run until no pass makes progress; then raise the first run's error."""
    # Schedules fire on the first pass only, so a slow pass cannot meet
    # new slots without end; the next call fires them (guide §7).
    _, first_error = self._fire_schedules(self.clock.now())
    for _ in range(CYCLE_BUDGET):
        progressed, errors = await self._pass(self.clock.now)
        first_error = first_error or (errors[0] if errors else None)
        if not progressed:
            break
    if first_error is not None:
        raise first_error


async def poll_once(self: SqliteRuntime) -> bool:
    """One pass over every run needing a decision and every ready task; True if progress."""
    return await self._poll(self.clock.now)


async def poll_once_as_of(self: SqliteRuntime, when: datetime) -> bool:
    """`poll_once` with every clock read at `when`."""
    return await self._poll(_fixed(when, self.clock))


async def _poll(self: SqliteRuntime, now: Now) -> bool:
    fired, fire_error = self._fire_schedules(now())
    progressed, errors = await self._pass(now)
    error = fire_error or (errors[0] if errors else None)
    if error is not None:
        raise error
    return progressed or fired


async def _pass(self: SqliteRuntime, now: Now) -> tuple[bool, list[HarvestError]]:
    """Drive the fleet once; one failing run never blocks the others; every run's error.

    With group commit (the default), a pass decides, claims and records
    many runs per transaction (`group_commit.GroupCommit`); without, each
    decision, claim and completion is its own transaction.
    """
    if self.settings.group_commit:
        return await self._group.run_pass(now)
    progressed = False
    errors: list[HarvestError] = []
    for exec_id in self._store.runs_needing_decision(now()):
        try:
            decision = self._decider.decide(exec_id, now())
            progressed = progressed or decision.progressed
            if decision.stuck:
                raise Stuck(exec_id=exec_id)
        except HarvestError as exc:
            errors.append(exc)
        # Each decision is its own transaction; yielding between them keeps a
        # host loop (the GUI's qasync loop) responsive over a pass of many runs.
        await asyncio.sleep(0)
    ran, task_errors = await self._run_ready_tasks(now)
    return progressed or ran, errors + task_errors


async def _run_ready_tasks(
    self: SqliteRuntime, now: Now
) -> tuple[bool, list[HarvestError]]:
    """Run every ready task, runs side by side, each run's tasks in order.

    Different runs do not wait on each other's bodies (sync bodies run in
    worker threads), while one run's completions land in the same order
    on every drive, so its history does not depend on thread timing.
    """
    by_run: dict[str, list[Any]] = {}
    for task in self._store.ready_tasks(None, now()):
        by_run.setdefault(task.exec_id, []).append(task)
    gate = asyncio.Semaphore(TASK_CONCURRENCY)
    errors: list[HarvestError] = []

    async def run_in_order(tasks: list[Any]) -> bool:
        ran = False
        async with gate:
            for task in tasks:
                try:
                    ran = await self._tasks.run(task, now) or ran
                except HarvestError as exc:
                    errors.append(exc)
        return ran

    results = await asyncio.gather(*(run_in_order(tasks) for tasks in by_run.values()))
    return any(results), errors


async def _run_until_blocked(
    self: SqliteRuntime, exec_id: str, now: Now, visiting: frozenset[str] = frozenset()
) -> RunState:
    decision: Decision | None = None
    for _ in range(CYCLE_BUDGET):
        at = now()
        if decision is None:
            # A person asked for this run: a panic's backoff does not apply.
            decision = self._decide_one(exec_id, at)
        if decision.state is not None:
            return decision.state
        if self.settings.group_commit:
            # The run's tasks, recorded in one commit with its next decision.
            ran, stepped = await self._group.drive_step(exec_id, now, decision)
            if ran:
                decision = stepped
                continue
        else:
            tasks = self._store.ready_tasks(exec_id, at)
            if tasks:
                for task in tasks:
                    await self._tasks.run(task, now)
                decision = None
                continue
        if await children_drive.drive_targets(
            self, decision.waiting_workflows, now, visiting | {exec_id}
        ):
            decision = None
            continue
        blocked = self._blocked(exec_id, decision, at)
        if blocked is not None:
            return blocked
        decision = None
    return RunState.InProgress()


def _decide_one(self: SqliteRuntime, exec_id: str, at: datetime) -> Decision:
    """One decision of the run a caller asked for (no panic backoff); claims with group commit."""
    if self.settings.group_commit:
        return self._group.decide_alone(exec_id, at, retry_panic_now=True)
    return self._decider.decide(exec_id, at, retry_panic_now=True)


async def serve(
    self: SqliteRuntime,
    stop: asyncio.Event | None = None,
    *,
    poll_interval: Duration = "20ms",
    grace: Duration = "5s",
) -> None:
    """Drive the file until `stop` is set or the task is cancelled (see `runtime/serving.py`).

    Each round applies queued client commands, fires due schedules and
    drives every run with ready work; between rounds it sleeps until
    `next_wakeup()`, an in-process call (start, signal, cancel, ...), or
    a commit by another process (seen within `poll_interval`). On stop,
    running activity bodies get `grace` to finish; one cut off re-runs
    later (at-least-once). The runtime stays usable afterwards.

    Raises:
        ValueError: a bad duration.
        RuntimeError: this runtime is already serving.
    """
    await serving.Server(self, stop, poll_interval, grace).run()


def next_wakeup(self: SqliteRuntime) -> datetime | None:
    """The earliest due timer, backoff, schedule slot, deadline or queued command.

    An aware datetime (maybe in the past: work is ready now), or None
    when nothing waits for a time.
    """
    return serving.next_wakeup(self)


def _blocked(
    self: SqliteRuntime, exec_id: str, decision: Decision, at: datetime
) -> RunState | None:
    """Where a parked run waits; None when it can go on at once."""
    if decision.inputs_left:
        return None
    wake = None if decision.idle else self._store.next_wakeup(exec_id)
    if wake is not None and wake <= at:
        return None
    if decision.waiting_signal is not None:
        return RunState.WaitingSignal(
            name=decision.waiting_signal, names=decision.waiting_signal_names
        )
    if decision.waiting_mutex is not None:
        return RunState.WaitingMutex(key=decision.waiting_mutex)
    if decision.waiting_workflow is not None:
        return RunState.WaitingWorkflow(exec_id=ExecutionId(decision.waiting_workflow))
    if wake is not None or decision.waiting_timer:
        return RunState.WaitingTimer()
    if decision.stuck:
        raise Stuck(exec_id=exec_id)
    return RunState.WaitingTimer()


def _fire_schedules(
    self: SqliteRuntime, at: datetime
) -> tuple[bool, HarvestError | None]:
    """Fire the due schedules at `at`; (whether a run started, the first error)."""
    started, error = schedules.fire_due(
        self._store,
        at,
        schedules.runtime_starter(self),
        schedules.is_registered(self),
        self._code_waits,
    )
    return started > 0, error


def _fixed(when: datetime, clock: Clock) -> Now:
    if not isinstance(when, datetime) or when.tzinfo is None:
        raise ValueError(f"the *_as_of drivers take an aware datetime, got {when!r}")
    # Each reading carries the real clock's, for the stamps that must be real.
    return lambda: DriveTime.of(when, clock.now())
