"""Driver: drives one run, or every run with ready work, over the engine's parts.

The facade's `run_until_*` and `poll_once*` calls are one line into it, and
the serving loop (`serving.Server`) runs its passes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harvest_engine.errors import HarvestError, Stuck
from harvest_engine.runtime.deciding.drive_time import DriveTime
from harvest_engine.runtime.engine import id_text
from harvest_engine.runtime.flow import queues as flow_queues
from harvest_engine.runtime.flow.gatekeeper import Gatekeeper
from harvest_engine.runtime.operating import schedules
from harvest_engine.runtime.serving.group_commit import GroupCommit
from harvest_engine.runtime.serving.tasks import TaskRunner
from harvest_engine.runtime.talking import held_starts
from harvest_engine.states import ExecutionId, RunState

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harvest_engine.clock import Clock
    from harvest_engine.flow import Queue
    from harvest_engine.runtime.deciding.cycle import Decision
    from harvest_engine.runtime.engine import Engine

# One drive call gives each run at most this many cycles, so a body that
# loops over activities forever cannot hold the caller for ever.
CYCLE_BUDGET = 100_000

Now = Callable[[], datetime]

# How many runs' activity tasks one pass runs at the same time.
TASK_CONCURRENCY = 8


class Driver:
    """Drives runs for one runtime: one run, every run, or serving until stopped.

    It owns what driving adds to the engine's parts: the task runner and
    the group commit (with the claims it carries between passes).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.store = engine.store
        self.clock = engine.clock
        self.settings = engine.settings
        self.decider = engine.decider
        self.tasks = TaskRunner(engine.store, engine.registry, engine.attempts)
        # Due schedule slots whose workflow is not registered yet: logged once,
        # not woken for, fired once the code registers (`Runtime.register_workflow`).
        self.code_waits = schedules.CodeWaits()
        # Flow control: admits waiting runs and attempts at the start of each
        # pass, and into the slots a batch's ended runs free, in its commit.
        self.gatekeeper = Gatekeeper(
            engine, self.tasks.time_out_waiting, self.tasks.names.remember
        )
        self.group = GroupCommit(
            engine.store,
            engine.decider,
            self.tasks,
            engine.cache,
            engine.settings,
            successors=self.gatekeeper.admit_successors,
        )

    async def run_until_blocked(self, exec_id: str | ExecutionId) -> RunState:
        """Drive one run until it ends or waits (the facade's `run_until_blocked`)."""
        # The decision's own read of the row answers whether the run exists.
        return await self.drive(id_text(exec_id), self.clock.now)

    async def run_until_blocked_as_of(
        self, exec_id: str | ExecutionId, when: datetime
    ) -> RunState:
        """`run_until_blocked` with every clock read at `when` (an aware datetime)."""
        fixed = _fixed(when, self.clock)
        return await self.drive(id_text(exec_id), fixed)

    async def run_until_idle(self) -> None:
        """Drive every run until no pass makes progress; then raise the first run's error."""
        # Schedules fire on the first pass only, so a slow pass cannot meet
        # new slots without end; the next call fires them (guide §7).
        _, first_error = self.fire_schedules(self.clock.now())
        for _ in range(CYCLE_BUDGET):
            progressed, errors = await self.one_pass(self.clock.now)
            first_error = first_error or (errors[0] if errors else None)
            if not progressed:
                break
        if first_error is not None:
            raise first_error

    async def poll_once(self) -> bool:
        """One pass over every run needing a decision and every ready task; True if progress."""
        return await self.poll(self.clock.now)

    async def poll_once_as_of(self, when: datetime) -> bool:
        """`poll_once` with every clock read at `when`."""
        return await self.poll(_fixed(when, self.clock))

    async def poll(self, now: Now) -> bool:
        """Fire due schedules and drive every run once; raise the first error; True if progress."""
        fired, fire_error = self.fire_schedules(now())
        progressed, errors = await self.one_pass(now)
        error = fire_error or (errors[0] if errors else None)
        if error is not None:
            raise error
        return progressed or fired

    async def one_pass(self, now: Now) -> tuple[bool, list[HarvestError]]:
        """Drive the fleet once; one failing run never blocks the others; every run's error."""
        admitted, admit_errors = self.admit(now())
        if self.settings.group_commit:
            progressed, errors = await self.group.run_pass(now)
            return progressed or admitted, admit_errors + errors
        progressed = admitted
        errors = admit_errors
        for exec_id in self.store.runs_needing_decision(now()):
            try:
                decision = self.decider.decide(exec_id, now())
                progressed = progressed or decision.progressed
                if decision.stuck:
                    raise Stuck(exec_id=exec_id)
            except HarvestError as exc:
                errors.append(exc)
            # Each decision is its own transaction; yielding between them keeps a
            # host loop (the GUI's qasync loop) responsive over a pass of many runs.
            await asyncio.sleep(0)
        ran, task_errors = await self.run_ready_tasks(now)
        return progressed or ran, errors + task_errors

    async def run_ready_tasks(self, now: Now) -> tuple[bool, list[HarvestError]]:
        """Run every ready task, runs side by side, each run's tasks in order."""
        by_run: dict[str, list[Any]] = {}
        for task in self.store.ready_tasks(None, now()):
            by_run.setdefault(task.exec_id, []).append(task)
        gate = asyncio.Semaphore(TASK_CONCURRENCY)
        errors: list[HarvestError] = []

        async def run_in_order(tasks: list[Any]) -> bool:
            ran = False
            async with gate:
                for task in tasks:
                    try:
                        ran = await self.tasks.run(task, now) or ran
                    except HarvestError as exc:
                        errors.append(exc)
            return ran

        results = await asyncio.gather(
            *(run_in_order(tasks) for tasks in by_run.values())
        )
        return any(results), errors

    async def drive(
        self, exec_id: str, now: Now, visiting: frozenset[str] = frozenset()
    ) -> RunState:
        """Drive `exec_id` (known to be an id) until it ends or waits; `visiting` breaks loops."""
        decision: Decision | None = None
        if not visiting:
            _, admit_errors = self.admit(now())  # a queued run may be let in first
            if admit_errors:
                raise admit_errors[0]
        for _ in range(CYCLE_BUDGET):
            at = now()
            if decision is None:
                # A person asked for this run: a panic's backoff does not apply.
                decision = self.decide_one(exec_id, at)
            if decision.state is not None:
                return decision.state
            if self.settings.group_commit:
                # The run's tasks, recorded in one commit with its next decision.
                ran, stepped = await self.group.drive_step(exec_id, now, decision)
                if ran:
                    decision = stepped
                    continue
            else:
                tasks = self.store.ready_tasks(exec_id, at)
                if tasks:
                    for task in tasks:
                        await self.tasks.run(task, now)
                    decision = None
                    continue
            if await self.drive_targets(
                decision.waiting_workflows, now, visiting | {exec_id}
            ):
                decision = None
                continue
            blocked = self.blocked(exec_id, decision, at)
            if blocked is not None:
                return blocked
            decision = None
        return RunState.InProgress()

    async def drive_targets(
        self,
        targets: Sequence[str],
        now: Callable[[], datetime],
        visiting: frozenset[str],
    ) -> bool:
        """Drive each waited-on run to its own stopping point; True if one of them ended."""
        ended = False
        for target in targets:
            if target in visiting:
                continue
            try:
                state = await self.drive(target, now, visiting)
            except HarvestError:
                row = self.store.execution(target)
                if row is None or row.state == "RUNNING":
                    raise
                ended = True
                continue
            ended = ended or state.is_terminal
        return ended

    def decide_one(self, exec_id: str, at: datetime) -> Decision:
        """One decision of the run a caller asked for (no panic backoff); claims with group commit."""
        if self.settings.group_commit:
            return self.group.decide_alone(exec_id, at, retry_panic_now=True)
        return self.decider.decide(exec_id, at, retry_panic_now=True)

    def next_wakeup(self) -> datetime | None:
        """The earliest due time of any kind, or None (the facade's `next_wakeup`).

        Flow control adds the next rate token, start delay or schedule_to_start
        of the work waiting in queues (`Gatekeeper.next_due`).
        """
        now, skip = self.clock.now(), self.code_waits.names()
        if self.gatekeeper.in_use():  # two reads: one round trip (read_due_ahead)
            self.store.read_due_ahead(now, skip, flow=True)
        due = self.store.earliest_due(now, skip_schedules=skip)
        flow = self.gatekeeper.next_due()
        if flow is None:
            return due
        return flow if due is None else min(due, flow)

    def register_queue(self, queue: Queue) -> None:
        """Store a queue's limits; the next admission looks at every queue again."""
        flow_queues.register_queue(self.engine, queue)
        self.gatekeeper.forget()

    def admit(self, at: datetime) -> tuple[bool, list[HarvestError]]:
        """Flow control's admissions at `at`; (whether any moved, the error if one failed)."""
        try:
            return self.gatekeeper.admit(at), []
        except HarvestError as exc:
            return False, [exc]

    def blocked(
        self, exec_id: str, decision: Decision, at: datetime
    ) -> RunState | None:
        """Where a parked run waits; None when it can go on at once."""
        if decision.inputs_left:
            return None
        wake = None if decision.idle else self.store.next_wakeup(exec_id)
        if wake is not None and wake <= at:
            return None
        if decision.waiting_signal is not None:
            return RunState.WaitingSignal(
                name=decision.waiting_signal, names=decision.waiting_signal_names
            )
        if decision.waiting_mutex is not None:
            return RunState.WaitingMutex(key=decision.waiting_mutex)
        if decision.waiting_workflow is not None:
            return RunState.WaitingWorkflow(
                exec_id=ExecutionId(decision.waiting_workflow)
            )
        if wake is not None or decision.waiting_timer:
            return RunState.WaitingTimer()
        if decision.stuck:
            raise Stuck(exec_id=exec_id)
        return RunState.WaitingTimer()

    def fire_schedules(self, at: datetime) -> tuple[bool, HarvestError | None]:
        """Fire the due schedules and held starts at `at`; (whether a run started, the first error).

        A pass begins here: its reads go first, together, as of `at`
        (`DurableStore.read_pass_ahead`; each later read of the pass takes
        its answer unless something was committed meanwhile).
        """
        carried = self.group.carried_ids if self.settings.group_commit else []
        self.store.read_pass_ahead(at, carried, self.gatekeeper.in_use())
        released, held_error = held_starts.release_due(
            self.engine, at, self.code_waits.held
        )
        started, error = schedules.fire_due(
            self.store,
            at,
            schedules.runtime_starter(self.engine),
            schedules.is_registered(self.engine),
            self.code_waits,
        )
        return started + released > 0, held_error or error


def _fixed(when: datetime, clock: Clock) -> Now:
    if not isinstance(when, datetime) or when.tzinfo is None:
        raise ValueError(f"the *_as_of drivers take an aware datetime, got {when!r}")
    # Each reading carries the real clock's, for the stamps that must be real.
    return lambda: DriveTime.of(when, clock.now())
