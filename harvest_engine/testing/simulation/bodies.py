"""Activity bodies under the simulation: the seed decides what each attempt does.

The harness registers every activity of the workload with a stand-in that
draws one behaviour per attempt (finish, fail, time out, heartbeat then
finish) and runs the real body only when the attempt finishes. It runs on
the event loop, never in a thread, so nothing depends on thread timing. A
timeout moves the simulated clock past the attempt's start_to_close and
raises TimeoutError, which the task runner records as the timeout it is.

Each body run is a side effect the harness logs by (run, activity id,
attempt): a second run of one attempt is allowed only when a fault (a
crash or a failed commit) came between, so its outcome was never recorded.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from harvest_engine.errors import ApplicationError
from harvest_engine.testing.simulation.faults import SimulatedCrash

if TYPE_CHECKING:
    import random
    from collections.abc import Callable

    from harvest_engine.activity import ActivityContext
    from harvest_engine.clock import ManualClock
    from harvest_engine.testing.simulation.faults import FaultPlan

BEHAVIOURS = ("finish", "finish", "finish", "finish", "heartbeat", "fail", "timeout")


class BodyLog:
    """Every body run, by (run, activity id, attempt), with the faults seen before it."""

    def __init__(self) -> None:
        self.runs: dict[tuple[str, int, int], list[int]] = {}
        self.violations: list[str] = []
        self.count = 0

    def ran(self, key: tuple[str, int, int], faults_so_far: int) -> None:
        """Log one run; a repeat with no fault since the last run is a violation."""
        self.count += 1
        earlier = self.runs.setdefault(key, [])
        if earlier and earlier[-1] == faults_so_far:
            self.violations.append(
                f"activity attempt {key} ran twice with no fault between"
            )
        earlier.append(faults_so_far)


def stand_in(
    body: Callable[..., Any],
    rng: random.Random,
    clock: ManualClock,
    plan: FaultPlan,
    log: BodyLog,
    trace: Callable[[str], None],
    start_to_close: float | None,
    dead: Callable[[], bool],
) -> Callable[[ActivityContext, Any], Any]:
    """The body the runtime runs for one activity: a seeded behaviour, then the real body."""

    async def run(ctx: ActivityContext, value: Any) -> Any:
        if dead():  # the process crashed while this body waited for its turn
            raise SimulatedCrash("a body of a dead process")
        info = ctx.info()
        log.ran((info.exec_id, info.activity_id, info.attempt), plan.disruptions())
        behaviour = rng.choice(BEHAVIOURS) if plan.active else "finish"
        trace(
            f"  body {info.activity_name} {info.exec_id[:8]}#{info.activity_id}"
            f" attempt {info.attempt}: {behaviour}"
        )
        if behaviour == "fail":
            raise ApplicationError("simulated failure", type="SimulatedFailure")
        if behaviour == "timeout" and start_to_close is not None:
            clock.advance(start_to_close + 1)
            raise TimeoutError("simulated hang past start_to_close")
        if behaviour == "heartbeat":
            ctx.heartbeat({"at": info.attempt})
        result = body(ctx, value)
        if inspect.isawaitable(result):
            result = await result
        return result

    return run
