"""Invariants of queues and of paused runs, read from the durable state after every step.

- a queue never holds more RUNNING admitted runs than its concurrency;
- admissions of a queue with a rate are spaced by at least per / limit on
  the simulated clock (the admission times are stored, so a crash cannot hide one);
- a dedup id never has two ENQUEUED or RUNNING runs in its queue;
- a run paused at two checks in a row took no decision between them: its
  history gained only what README "Repairing a run" lets a paused run
  record (an attempt already running ends and records; an update is
  answered; an imposed end).
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from harvest_engine.events import IMPOSED

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harvest_engine.events import HistoryEvent
    from harvest_engine.flow import Queue
    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.store.rows import ExecutionRecord

# One statement both dialects run as written (no parameters).
_WAITS = (
    "SELECT w.exec_id, w.queue, w.dedup_id, w.admitted_at, e.state "
    "FROM harvest_flow_waits w JOIN harvest_executions e ON e.exec_id = w.exec_id "
    "ORDER BY w.id"
)

PAUSED_MAY_RECORD = frozenset(
    {
        "ActivityCompleted",
        "ActivityFailed",
        "ActivityTimedOut",
        "ActivityCancelled",
        "UpdateAdmitted",
        "UpdateCompleted",
        "UpdateFailed",
    }
)
"""What a paused run's history may gain: a body already running finishes and records;
an update is answered at once (its handler runs on its own replay, deciding
nothing). An imposed end (a reset terminates the paused run) too."""


class QueueChecks:
    """The queues' limits and dedup ids, against the stored waits."""

    def __init__(self, queues: Sequence[Queue]) -> None:
        self.queues = {queue.name: queue for queue in queues}
        # Every admission seen: run -> (queue, admitted_at in microseconds).
        self.admitted: dict[str, tuple[str, int]] = {}
        self.checks = 0

    def check(self, store: DurableStore) -> list[str]:
        """The violations of the queues' limits now (empty when all hold)."""
        if not self.queues:
            return []
        with store.flow_reads() as reads:
            counts = reads.run_counts()
            rows = reads._conn.execute(_WAITS).fetchall()  # noqa: SLF001 - a raw read
        problems: list[str] = []
        for name, queue in self.queues.items():
            self.checks += 1
            running = counts.get(name, (0, 0, None))[0]
            if queue.concurrency is not None and running > queue.concurrency:
                problems.append(
                    f"queue {name}: {running} RUNNING admitted runs,"
                    f" concurrency {queue.concurrency}"
                )
        live: Counter[tuple[str, str]] = Counter()
        for exec_id, queue_name, dedup_id, admitted_at, state in rows:
            if admitted_at is not None:
                self.admitted.setdefault(
                    str(exec_id), (str(queue_name), int(admitted_at))
                )
            if dedup_id is not None and state in ("ENQUEUED", "RUNNING"):
                live[(str(queue_name), str(dedup_id))] += 1
        self.checks += 1
        problems += [
            f"queue {name}: dedup id {dedup} has {n} ENQUEUED/RUNNING runs"
            for (name, dedup), n in sorted(live.items())
            if n > 1
        ]
        return problems + self._spacing()

    def _spacing(self) -> list[str]:
        problems: list[str] = []
        for name, queue in self.queues.items():
            if queue.rate is None:
                continue
            self.checks += 1
            gap = queue.rate.interval // timedelta(microseconds=1)
            times = sorted(at for q, at in self.admitted.values() if q == name)
            for before, after in pairwise(times):
                if after - before < gap - 1:  # a microsecond of rounding
                    problems.append(
                        f"queue {name}: admissions {(after - before) / 1e6:g} s apart,"
                        f" the rate spaces them {gap / 1e6:g} s"
                    )
                    break
        return problems


class PauseChecks:
    """A paused run takes no decision: what its history gains while it stays paused."""

    def __init__(self) -> None:
        # Runs paused at the last check: their history's length then.
        self.paused: dict[str, int] = {}
        self.checks = 0

    def check(
        self,
        exec_id: str,
        row: ExecutionRecord | None,
        events: Sequence[HistoryEvent],
    ) -> list[str]:
        """The violation of run `exec_id`, if paused now and at the last check."""
        was = self.paused.pop(exec_id, None)
        if row is None or row.pause_reason is None:
            return []
        self.paused[exec_id] = len(events)
        if was is None:
            return []
        self.checks += 1
        grown = [e for e in events[was:] if not _may_record_paused(e)]
        if not grown:
            return []
        first = grown[0]
        return [
            f"run {exec_id[:8]}: paused, yet recorded {first.type} (event {first.seq})"
        ]


def _may_record_paused(event: HistoryEvent) -> bool:
    if event.type == "WorkflowCancelled":  # an imposed end (hard_seal), not the body's
        return bool(event.attrs.get(IMPOSED))
    return event.type in PAUSED_MAY_RECORD


def copied_from(events: Sequence[HistoryEvent]) -> Any:
    """The run a reset or a fork copied this history from (None for a started run)."""
    if not events or events[0].type != "WorkflowStarted":
        return None
    attrs = events[0].attrs
    return attrs.get("reset_from") or attrs.get("forked_from")
