"""MetricsInterceptor: OpenTelemetry counters and histograms of runs, attempts and decisions.

Instruments (attributes in brackets):
- ``harvest.runs.started`` (workflow): runs whose first decision committed
  (children and continued runs included), counted where they run.
- ``harvest.runs.closed`` (workflow, state): runs sealed, whichever way
  they ended (their decision, a terminate, a cancel, a reset, a timeout, a
  parent's close), counted where they were sealed, once committed.
- ``harvest.activity.attempts`` (activity, outcome): COMPLETED, FAILED, TIMED_OUT.
- ``harvest.activity.schedule_to_start`` (activity), seconds: from an
  attempt being ready to its body starting.
- ``harvest.decision.duration`` (workflow), seconds: one decision cycle.
- ``harvest.queue.depth`` (queue, waiting|running): each queue's runs or
  attempts waiting for admission and holding a slot, read when the metrics
  are collected from the source given to `observe_queues` (`rt.queues`,
  `client.queues`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from opentelemetry import metrics

from harvest_engine.interceptors import (
    ActivityCall,
    DecisionCall,
    DecisionResult,
    Interceptor,
    RunClosedCall,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    from opentelemetry.metrics import CallbackOptions, Observation

    from harvest_engine.activity import AttemptResult
    from harvest_engine.flow import QueueInfo


class MetricsInterceptor(Interceptor):
    """Counts runs and attempts and times decisions (see the module docstring).

    Args:
        meter_provider: the provider to make instruments with; None uses the
            global one the app set (`metrics.set_meter_provider`).
    """

    def __init__(self, meter_provider: metrics.MeterProvider | None = None) -> None:
        meter = metrics.get_meter("harvest_engine", meter_provider=meter_provider)
        self._started = meter.create_counter(
            "harvest.runs.started",
            unit="{run}",
            description="runs begun (first decision)",
        )
        self._closed = meter.create_counter(
            "harvest.runs.closed", unit="{run}", description="runs ended, by state"
        )
        self._attempts = meter.create_counter(
            "harvest.activity.attempts",
            unit="{attempt}",
            description="activity attempts, by outcome",
        )
        self._schedule_to_start = meter.create_histogram(
            "harvest.activity.schedule_to_start",
            unit="s",
            description="from an attempt being ready to its body starting",
        )
        self._decision = meter.create_histogram(
            "harvest.decision.duration", unit="s", description="one decision cycle"
        )
        self._meter = meter
        self._queue_sources: list[Callable[[], list[QueueInfo]]] = []

    def observe_queues(self, source: Callable[[], list[QueueInfo]]) -> None:
        """Report queue depth from `source` (`rt.queues` or `client.queues`) at each collection.

        The gauge is made at the first call; later sources add their queues.
        """
        if not self._queue_sources:
            self._meter.create_observable_gauge(
                "harvest.queue.depth",
                callbacks=[self._observe_depth],
                unit="{run}",
                description="runs or attempts per queue, waiting or holding a slot",
            )
        self._queue_sources.append(source)

    def _observe_depth(self, options: CallbackOptions) -> Iterable[Observation]:
        """One observation per queue and kind (waiting, running)."""
        del options
        for source in self._queue_sources:
            for queue in source():
                yield metrics.Observation(
                    queue.waiting, {"queue": queue.name, "kind": "waiting"}
                )
                yield metrics.Observation(
                    queue.running, {"queue": queue.name, "kind": "running"}
                )

    def decision(
        self,
        call: DecisionCall,
        proceed: Callable[[DecisionCall], DecisionResult],
    ) -> DecisionResult:
        """Time the cycle; count a run begun in it (`run_closed` counts its end)."""
        began = time.perf_counter()
        workflow = {"workflow": call.workflow_name}
        try:
            result = proceed(call)
        finally:
            self._decision.record(time.perf_counter() - began, workflow)
        if call.first and result.progressed:
            self._started.add(1, workflow)
        return result

    def run_closed(self, call: RunClosedCall) -> None:
        """Count a run sealed, by workflow and state."""
        self._closed.add(1, {"workflow": call.workflow_name, "state": call.state})

    async def activity(
        self,
        call: ActivityCall,
        proceed: Callable[[ActivityCall], Awaitable[AttemptResult]],
    ) -> AttemptResult:
        """Record the wait before the body and count the attempt by outcome."""
        name = {"activity": call.activity_name}
        waited = (call.started_at - call.ready_at).total_seconds()
        self._schedule_to_start.record(max(0.0, waited), name)
        result = await proceed(call)
        if result.ok:
            outcome = "COMPLETED"
        else:
            outcome = "TIMED_OUT" if result.timed_out else "FAILED"
        self._attempts.add(1, {**name, "outcome": outcome})
        return result
