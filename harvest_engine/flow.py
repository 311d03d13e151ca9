"""Flow-control values: a Rate, a Queue, what a queue reports and where a run waits.

Values only, checked when made (a bad limit is `InvalidFlowOption`
before anything is written); the runtime's admission (runtime/flow/) and
the stores' tables (store/sql/flow.py) take them.

Rates are evenly spaced: ``Rate(10, "1s")`` admits one start (or one
attempt) every 100 ms, never a burst of ten, so a provider's
"60 a minute" is never exceeded over any window.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.errors import InvalidFlowOption
from harvest_engine.names import check_name

PRIORITY_MIN = 0
"""The most urgent priority (the default): lower numbers are admitted first."""

PRIORITY_MAX = 2**31 - 1
"""The least urgent priority a start may ask for."""

QUEUE_WORKFLOW_PREFIX = "workflow:"
"""The implicit queue of a workflow declaring `concurrency` or `throttle`."""

QUEUE_ACTIVITY_PREFIX = "activity:"
"""The implicit queue of an activity declaring `max_concurrent` or `rate_limit`."""


def _positive(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidFlowOption(option=what, why=f"a whole number, got {value!r}")
    if value <= 0:
        raise InvalidFlowOption(option=what, why=f"must be positive, got {value}")
    return value


@dataclass(frozen=True)
class Rate:
    """At most `limit` admissions per `per`, spaced evenly (one every per / limit).

    Args:
        limit: how many per period (a positive whole number).
        per: the period (a positive duration: ``"1m"``, ``1.0``, a timedelta).

    Raises:
        InvalidFlowOption: a limit below 1 or a zero period.
    """

    limit: int
    per: Duration

    def __post_init__(self) -> None:
        _positive(self.limit, "Rate.limit")
        try:
            period = to_timedelta(self.per, what="Rate.per")
        except ValueError as exc:
            raise InvalidFlowOption(option="Rate.per", why=str(exc)) from None
        if period <= timedelta(0):
            raise InvalidFlowOption(option="Rate.per", why="the period must be > 0")

    @property
    def period(self) -> timedelta:
        """The period as a timedelta."""
        return to_timedelta(self.per)

    @property
    def interval(self) -> timedelta:
        """The spacing between two admissions: per / limit."""
        return self.period / self.limit

    @staticmethod
    def coerce(value: Any, what: str) -> Rate | None:
        """`value` when it is a Rate (or None); InvalidFlowOption otherwise."""
        if value is None or isinstance(value, Rate):
            return value
        raise InvalidFlowOption(option=what, why=f"a Rate(limit, per), got {value!r}")


@dataclass(frozen=True)
class Queue:
    """A named queue: the limits its runs (and activities naming it) are admitted under.

    Args:
        name: the queue's name (what `StartOptions(queue=)` and
            `@activity(queue=)` name).
        concurrency: at most this many RUNNING at once, over every worker.
        worker_concurrency: at most this many admitted by one worker.
        rate: admissions spaced by `rate` (see `Rate`).
        partition_concurrency: at most this many RUNNING per partition key;
            partitions are admitted round robin.
        priority: whether starts may carry a priority (lower first).

    Raises:
        InvalidFlowOption: a limit below 1 or a rate that is not a `Rate`.
        InvalidName: a blank or over-long name.
    """

    name: str
    concurrency: int | None = None
    worker_concurrency: int | None = None
    rate: Rate | None = None
    partition_concurrency: int | None = None
    priority: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidFlowOption(option="Queue.name", why="a non-blank text")
        check_name(self.name, "queue name")
        _positive(self.concurrency, "Queue.concurrency")
        _positive(self.worker_concurrency, "Queue.worker_concurrency")
        _positive(self.partition_concurrency, "Queue.partition_concurrency")
        Rate.coerce(self.rate, "Queue.rate")
        if not isinstance(self.priority, bool):
            raise InvalidFlowOption(
                option="Queue.priority", why=f"True or False, got {self.priority!r}"
            )


@dataclass(frozen=True)
class QueueInfo:
    """One queue as `rt.queues()` / `client.queues()` / `harvest queues` show it.

    Attributes:
        name: the queue (``workflow:NAME`` / ``activity:NAME`` for the
            implicit queues of a workflow's or an activity's own limits).
        concurrency, worker_concurrency, partition_concurrency, rate, priority:
            its limits.
        running: runs (or attempts) holding a slot now.
        waiting: runs (or attempts) waiting for admission.
        oldest_wait: when the longest-waiting one was enqueued (None if none).
    """

    name: str
    concurrency: int | None
    worker_concurrency: int | None
    rate: Rate | None
    partition_concurrency: int | None
    priority: bool
    running: int
    waiting: int
    oldest_wait: datetime | None

    def to_json(self) -> dict[str, Any]:
        """As `harvest queues --json` prints it."""
        return {
            "name": self.name,
            "concurrency": self.concurrency,
            "worker_concurrency": self.worker_concurrency,
            "rate": None
            if self.rate is None
            else {"limit": self.rate.limit, "per": self.rate.period.total_seconds()},
            "partition_concurrency": self.partition_concurrency,
            "priority": self.priority,
            "running": self.running,
            "waiting": self.waiting,
            "oldest_wait": None
            if self.oldest_wait is None
            else self.oldest_wait.isoformat(),
        }


def check_priority(value: Any) -> int:
    """A start's priority; InvalidFlowOption outside PRIORITY_MIN..PRIORITY_MAX."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidFlowOption(
            option="StartOptions.priority", why=f"a whole number, got {value!r}"
        )
    if not PRIORITY_MIN <= value <= PRIORITY_MAX:
        raise InvalidFlowOption(
            option="StartOptions.priority",
            why=f"{value} is outside {PRIORITY_MIN}..{PRIORITY_MAX}",
        )
    return value


def check_start_delay(value: Duration | None) -> timedelta | None:
    """A start's delay as a timedelta (None: none); InvalidFlowOption when it is not one."""
    if value is None:
        return None
    try:
        return to_timedelta(value, what="StartOptions.start_delay")
    except ValueError as exc:
        raise InvalidFlowOption(
            option="StartOptions.start_delay", why=str(exc)
        ) from None


def positive_limit(value: Any, what: str) -> int | None:
    """A declared limit (None: none); InvalidFlowOption unless a positive whole number."""
    return _positive(value, what)
