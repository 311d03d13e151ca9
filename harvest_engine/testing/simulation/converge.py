"""The converging phase: faults stop, and every run must end or say what it waits on.

Held-back commands arrive, schedules are deleted, every running run gets the
workload's stop signal, and the harness serves (applying commands, driving
rounds, moving the clock to the next due time) until nothing is due within
the horizon. A run parked on a mutex or on another run keeps its decision
flag, so "due now" with no progress moves the clock to the next timer.
"""

from __future__ import annotations

from contextlib import suppress
from datetime import timedelta
from typing import TYPE_CHECKING, Protocol

from harvest_engine.errors import HarvestError

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.clock import ManualClock
    from harvest_engine.runtime.runtime import Runtime
    from harvest_engine.testing.simulation.clients import Sent
    from harvest_engine.testing.simulation.faults import FaultPlan, SimulatedStore
    from harvest_engine.testing.simulation.invariants import Invariants
    from harvest_engine.testing.simulation.result import SimulationResult
    from harvest_engine.testing.simulation.workload import Workload


class Simulation(Protocol):
    """What the converging phase uses of a `harness.Simulation`."""

    plan: FaultPlan
    workload: Workload
    clock: ManualClock
    store: SimulatedStore | None
    invariants: Invariants
    result: SimulationResult
    in_flight: list[Sent]

    @property
    def rt(self) -> Runtime: ...  # noqa: D102

    def trace(self, line: str) -> None: ...  # noqa: D102

    def deliver(self, sent: Sent, *, retry: bool) -> None: ...  # noqa: D102

    def apply(self) -> None: ...  # noqa: D102

    async def serve_round(self) -> bool: ...  # noqa: D102

    def check(self, *, converged: bool) -> None: ...  # noqa: D102


# Steps of the converging phase before a run that has not ended is a failure.
CONVERGE_STEPS = 400
# How far past its last due time the converging phase looks (a long timer).
HORIZON = timedelta(days=30)


async def converge(sim: Simulation) -> None:
    """Faults stop; schedules go; runs get the stop signal; serve until nothing is due."""
    sim.plan.active = False
    sim.trace("---- faults stop")
    for held in sim.in_flight:
        sim.deliver(held, retry=False)
    sim.in_flight = []
    for schedule in sim.workload.schedules:
        sim.rt.delete_schedule(schedule.workflow_name)
    stopped = False
    limit = sim.clock.now() + HORIZON
    for _ in range(CONVERGE_STEPS):
        await _settle(sim)
        if not stopped and sim.workload.stop_signal is not None:
            stopped = True
            for exec_id in known_running(sim):
                with suppress(HarvestError):
                    sim.rt.send_signal(exec_id, sim.workload.stop_signal, True)
            continue
        due = sim.rt.next_wakeup()
        if due is not None and due <= sim.clock.now():
            # Due now yet nothing moved: a mutex waiter keeps its decision
            # flag (runtime/deciding/mutex.py), so time goes to the next timer.
            due = _next_timed_due(sim)
        if due is None or due > limit:
            break
        sim.clock.set(max(due, sim.clock.now()))
    sim.check(converged=True)
    _final_states(sim)


async def _settle(sim: Simulation) -> None:
    for _ in range(CONVERGE_STEPS):
        sim.apply()
        if not await sim.serve_round() and not sim.rt.store.pending_commands(1):
            return


def _next_timed_due(sim: Simulation) -> datetime | None:
    """The earliest timer or task ready time after now, over the running runs."""
    assert sim.store is not None
    now = sim.clock.now()
    times = [sim.store.inner.next_wakeup(e) for e in known_running(sim)]
    later = [t for t in times if t is not None and t > now]
    return min(later, default=None)


def known_running(sim: Simulation) -> list[str]:
    """The running runs' ids, read from the durable state."""
    assert sim.store is not None
    sim.invariants.run_ids(sim.store.inner)
    return [e for e, s in sorted(sim.invariants.states.items()) if s == "RUNNING"]


def _final_states(sim: Simulation) -> None:
    for exec_id in known_running(sim):
        try:
            waits = sim.rt.where_waiting(exec_id)
        except HarvestError as exc:
            sim.result.fail(
                f"run {exec_id[:8]} did not converge: {type(exc).__name__}: {exc}"
            )
            continue
        if sim.workload.must_end or not waits:
            what = ", ".join(f"{w.kind} {w.name}" for w in waits) or "nothing"
            sim.result.fail(f"run {exec_id[:8]} did not converge (waits on {what})")
    assert sim.store is not None
    for state, n in sorted(sim.store.inner.counts_by_state().items()):
        sim.trace(f"  end {state}: {n}")
