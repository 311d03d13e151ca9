"""Simulation: one seed drives a runtime, its store, its clock, its bodies and its clients.

Everything runs on one thread and one event loop: the seed's generator picks
each step (a client queues a command, the server applies commands, a round
drives the runs, the clock moves), the fault plan breaks statements and
commits, and the invariants are checked after every step. A crash drops the
runtime and opens a new one on the same file (what committed survives).
Then faults stop, schedules go, every running run gets the workload's stop
signal, and the harness serves until nothing is due: every run must have
converged. Fresh ids come from the seed too (`uuid.uuid4` is swapped while
a simulation runs), so the same seed gives the same trace, byte for byte.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from contextlib import suppress
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from harvest_engine.authoring import ActivityInfo, info_of
from harvest_engine.clock import ManualClock
from harvest_engine.errors import HarvestError
from harvest_engine.runtime.flow import gatekeeper
from harvest_engine.runtime.runtime import Runtime
from harvest_engine.runtime.serving import commands
from harvest_engine.testing.simulation.backends import SqliteFile
from harvest_engine.testing.simulation.bodies import BodyLog, stand_in
from harvest_engine.testing.simulation.clients import Clients, Sent
from harvest_engine.testing.simulation.converge import converge
from harvest_engine.testing.simulation.faults import (
    FaultPlan,
    SimulatedCrash,
    SimulatedStore,
)
from harvest_engine.testing.simulation.invariants import Invariants
from harvest_engine.testing.simulation.result import SimulationResult

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.schedules import WorkflowSchedule
    from harvest_engine.testing.simulation.backends import Backend, ClientQueue
    from harvest_engine.testing.simulation.workload import Workload

START = datetime(2030, 1, 1, tzinfo=UTC)
STEP_KINDS = (
    "submit",
    "submit",
    "submit",
    "retry",
    "apply",
    "apply",
    "round",
    "round",
    "round",
    "clock",
)


class Simulation:
    """One seed's simulation of a workload; `run()` returns its `SimulationResult`.

    Args:
        workload: the workflows, activities and client traffic (`Workload`).
        seed: every choice, fault and id comes from it.
        steps: steps of the faulty phase.
        clients: how many simulated clients send commands.
        faults: whether faults are injected at all.
        backend: where the database lives (default: a SQLite file in a fresh
            temporary folder; `PostgresDatabase(dsn)` for Postgres).
        make_plan: builds the fault plan from its generator (to change the rates).
    """

    def __init__(
        self,
        workload: Workload,
        seed: int,
        *,
        steps: int = 60,
        clients: int = 3,
        faults: bool = True,
        backend: Backend | None = None,
        make_plan: Callable[[random.Random], FaultPlan] | None = None,
    ) -> None:
        self.workload = workload
        self.seed = seed
        self.steps = steps
        self.rng = random.Random(f"harvest-sim:{seed}:choices")
        self.bodies_rng = random.Random(f"harvest-sim:{seed}:bodies")
        self._ids = random.Random(f"harvest-sim:{seed}:ids")
        plan_rng = random.Random(f"harvest-sim:{seed}:faults")
        self.plan = (make_plan or FaultPlan)(plan_rng)
        self.plan.active = faults
        self.clock = ManualClock(START)
        self.clients = Clients(clients, workload, self.rng)
        self.invariants = Invariants(workload.workflows, workload.queues)
        self.body_log = BodyLog()
        self.result = SimulationResult(seed=seed)
        self.backend: Backend = backend or SqliteFile()
        self.runtime: Runtime | None = None
        self.store: SimulatedStore | None = None
        self.queue: ClientQueue | None = None
        # Commands a client sent that the network holds back (reordered).
        self.in_flight: list[Sent] = []

    # -- running --------------------------------------------------------------------

    def run(self) -> SimulationResult:
        """Run the whole simulation on a fresh event loop; its result."""
        return asyncio.run(self.run_async())

    async def run_async(self) -> SimulationResult:
        """Run the whole simulation on the running loop; its result."""
        gate = vars(gatekeeper)
        real_uuid4, real_time = uuid.uuid4, gate["time"]
        uuid.uuid4 = self._uuid4
        # The gatekeeper rechecks a full queue after real seconds: simulated ones here.
        gate["time"] = _SimulatedTime(self.clock)
        try:
            await self._simulate()
        except Exception as exc:  # noqa: BLE001 - a harness-level surprise is a failure
            self.result.fail(f"harness error: {type(exc).__name__}: {exc}")
        finally:
            uuid.uuid4 = real_uuid4
            gate["time"] = real_time
            self._close()
            self.backend.close()
        self.result.faults = dict(self.plan.counts)
        self.result.checks = self.invariants.total_checks()
        self.result.bodies = self.body_log.count
        return self.result

    def _uuid4(self) -> uuid.UUID:
        return uuid.UUID(int=self._ids.getrandbits(128), version=4)

    def trace(self, line: str) -> None:
        """Add a line to the trace (what happened, in order)."""
        self.result.trace.append(line)

    async def _simulate(self) -> None:
        await self._open()
        self._register_queues()
        for schedule in self.workload.schedules:
            await self._guarded("schedule", partial(self._upsert, schedule))
        for n in range(self.steps):
            await self._step(n, self.rng.choice(STEP_KINDS))
            if self.result.failures:
                return
        await converge(self)

    def _register_queues(self) -> None:
        """Store the workload's queues (setup, before any fault: their limits are invariants)."""
        active, self.plan.active = self.plan.active, False
        try:
            for queue in self.workload.queues:
                self.rt.register_queue(queue)
        finally:
            self.plan.active = active

    def _upsert(self, schedule: WorkflowSchedule) -> None:
        self.rt.upsert_schedule(schedule)

    @property
    def rt(self) -> Runtime:
        """The runtime of the current (simulated) process."""
        assert self.runtime is not None
        return self.runtime

    async def _step(self, n: int, kind: str) -> None:
        at = int((self.clock.now() - START).total_seconds())
        self.trace(f"{n:04d} t+{at}s {kind}")
        await self._guarded(kind, lambda: self._act(kind))
        self.check(converged=False)

    async def _act(self, kind: str) -> Any:
        if kind == "submit":
            client = self.rng.randrange(self.clients.count)
            failed = self._runs_in("FAILED")
            sent = self.clients.make(client, self._known_runs(), failed)
            self._submit(sent)
        elif kind == "retry" and self.clients.sent:
            again = self.rng.choice(sorted(self.clients.sent))
            self._submit(self.clients.sent[again], retry=True)
        elif kind == "apply":
            self.apply()
        elif kind == "round":
            await self.serve_round()
        elif kind == "clock":
            due = self.rt.next_wakeup()
            if due is not None and due > self.clock.now() and self.rng.random() < 0.7:
                self.clock.set(due)
            else:
                self.clock.advance(self.rng.choice((1, 10, 60, 600)))

    async def _guarded(self, what: str, act: Callable[[], Any]) -> None:
        """Run one action; a simulated crash reopens the store, a typed error is traced."""
        try:
            result = act()
            if asyncio.iscoroutine(result):
                await result
        except SimulatedCrash as crash:
            self.trace(f"  crash in {what} ({crash}): reopen")
            await self._reopen()
        except HarvestError as exc:
            self.trace(f"  {what}: {type(exc).__name__}")
        self._flush_notes()

    def _flush_notes(self) -> None:
        for note in self.plan.notes:
            self.trace(f"  {note}")
        self.plan.notes.clear()

    def _submit(self, sent: Sent, *, retry: bool = False) -> None:
        assert self.queue is not None
        if self.plan.held_back():
            self.in_flight.append(sent)
            self.trace(f"  {sent.command_id} held back (reordered)")
            return
        if self.in_flight:  # what was held back arrives now, shuffled, after it
            late, self.in_flight = self.in_flight, []
            self.plan.rng.shuffle(late)
            self.deliver(sent, retry=retry)
            for held in late:
                self.deliver(held, retry=False)
            return
        self.deliver(sent, retry=retry)

    def deliver(self, sent: Sent, *, retry: bool) -> None:
        """Queue a client's command on the store's command queue."""
        assert self.queue is not None
        queued = self.clients.submit(self.queue, sent, self.clock.now())
        label = "retry" if retry else "send"
        self.trace(
            f"  {label} {sent.command_id} {sent.record.KIND}: {'queued' if queued else 'held'}"
        )

    def apply(self) -> None:
        """The server applies queued commands; the clients read their replies."""
        # As the serving loop does: a signal is decided in its command's transaction.
        applied = commands.apply_pending(self.rt._engine, decide=True)  # noqa: SLF001
        self.trace(f"  applied {applied}")
        self._read_replies()

    def _read_replies(self) -> None:
        assert self.queue is not None
        for sent in self.clients.read_replies(self.queue):
            verdict = "ok" if sent.ok else sent.reply
            self.trace(f"  reply {sent.command_id}: {verdict}")

    async def serve_round(self) -> bool:
        """One serving round: due schedules, then one pass over every run; whether it moved."""
        driver = self.rt._driver  # noqa: SLF001
        fired, fire_error = driver.fire_schedules(self.clock.now())
        progressed, errors = await driver.one_pass(self.clock.now)
        for error in [fire_error, *errors]:
            if error is not None:
                self.trace(f"  round: {type(error).__name__}")
        return fired or progressed

    def _known_runs(self) -> list[str]:
        states = self.invariants.states
        return sorted(e for e, state in states.items() if state == "RUNNING") or sorted(
            states
        )

    def _runs_in(self, state: str) -> list[str]:
        return sorted(e for e, s in self.invariants.states.items() if s == state)

    def check(self, *, converged: bool) -> None:
        """Check every invariant; record each violation as a failure and in the trace."""
        assert self.store is not None
        problems = self.invariants.check(self.store.inner)
        problems += self.invariants.commands(
            list(self.clients.sent.values()), converged=converged
        )
        problems += self.body_log.violations
        self.body_log.violations.clear()
        for problem in problems:
            self.result.fail(problem)
            self.trace(f"  VIOLATION {problem}")

    # -- opening, crashing, converging ---------------------------------------------

    async def _open(self) -> None:
        inner = self.backend.open_store(self.clock.now())
        self.store = SimulatedStore(inner, self.plan, self.clock)
        self.runtime = None
        rt = Runtime(self.store, clock=self.clock)
        rt.settings.group_commit_seconds = 1e9  # batches cut by count, not by wall time
        rt.settings.record_window_seconds = (
            0.0  # records grouped by the seed, not by wall time
        )
        for fn in self.workload.workflows:
            rt.register_workflow(fn)
        for fn in self.workload.activities:
            info: ActivityInfo = info_of(fn, ActivityInfo)
            seconds = (
                None
                if info.start_to_close is None
                else info.start_to_close.total_seconds()
            )
            assert info.fn is not None
            body = stand_in(
                info.fn,
                self.bodies_rng,
                self.clock,
                self.plan,
                self.body_log,
                self.trace,
                seconds,
                partial(_crashed, self.store),
            )
            rt.registry.add_activity(info, body)
        for queue in self.workload.queues:  # stored once; a new process knows it too
            rt.registry.add_queue(queue)
        self.runtime = rt
        if self.queue is None:
            self.queue = self.backend.open_queue()

    async def _reopen(self) -> None:
        """The process died: cancel what it left running, close it, open the file again."""
        self.result.restarts += 1
        current = asyncio.current_task()
        for task in asyncio.all_tasks():
            if task is not current:
                task.cancel()
                with suppress(BaseException):
                    await task
        self._close(keep_queue=True)
        while True:
            try:
                await self._open()
                return
            except SimulatedCrash as crash:  # died again while opening
                self.trace(f"  crash while reopening ({crash})")
                self._close(keep_queue=True)

    def _close(self, *, keep_queue: bool = False) -> None:
        if self.runtime is not None:
            with suppress(BaseException):
                self.runtime.close()
            self.runtime = None
        elif self.store is not None:
            with suppress(BaseException):
                self.store.close()
        self.store = None
        if self.queue is not None and not keep_queue:
            self.queue.close()
            self.queue = None


class _SimulatedTime:
    """`time.monotonic` read off the simulated clock (seconds)."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock

    def monotonic(self) -> float:
        return (self.clock.now() - START).total_seconds()


def _crashed(store: SimulatedStore) -> bool:
    return store.crashed
