"""Schedule specs (cron via croniter, fixed intervals), WorkflowSchedule and slot arithmetic.

Pure: no store, no clock. The runtime fires the slots, the GUI's schedule
editor previews them with `next_fire_times`, and both compute the same slots.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter

from harvest_engine import payloads
from harvest_engine.durations import Duration, format_duration, to_timedelta
from harvest_engine.errors import Unsupported
from harvest_engine.names import check_name

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Longer periods put their first slot near the end of the calendar.
_MAX_INTERVAL = timedelta(days=365_250)


class Overlap(StrEnum):
    """What a slot does while earlier runs of the schedule still run."""

    SKIP = "skip"
    """Drop the slot while `max_active_runs` runs of the schedule are RUNNING."""
    ALLOW_ALL = "allow_all"
    """Start a run for every slot."""


# Overlap policies of the core that one writer cannot honour (guide §7).
_REFUSED_OVERLAP = {
    "buffer_one": "a buffered slot needs a scheduler that outlives the pass",
    "buffer_all": "a buffered slot needs a scheduler that outlives the pass",
    "cancel_other": "cancelling the running run is not done by this backend's scheduler",
    "terminate_other": "terminating the running run is not done by this backend's scheduler",
}


@dataclass(frozen=True)
class Schedule:
    """When a schedule fires: ``Schedule.cron("0 3 * * *")`` or ``Schedule.every("15m")``.

    Attributes:
        cron_expression: a five-field cron expression (or an ``@daily``-style
            alias), parsed by croniter; None for an interval.
        timezone: the IANA zone the cron fields are read in.
        interval: the period of an interval schedule, in whole seconds; slots
            sit on multiples of it counted from the Unix epoch.
    """

    cron_expression: str | None = None
    timezone: str = "UTC"
    interval: timedelta | None = None

    @classmethod
    def cron(cls, expression: str, timezone: str = "UTC") -> Schedule:
        """A cron schedule, read in `timezone` (default UTC).

        Raises:
            ValueError: the expression is not a valid five-field cron
                expression, or the zone is unknown.
        """
        if not isinstance(expression, str):
            raise ValueError(f"a cron expression is text, got {expression!r}")
        text = " ".join(expression.split())
        fields = text.split(" ")
        if not text.startswith("@") and len(fields) != 5:
            raise ValueError(
                f"cron expression {expression!r} needs five fields "
                "(minute hour day-of-month month day-of-week)"
            )
        if not croniter.is_valid(text):
            raise ValueError(
                f"cron expression {expression!r} is not valid{_bad_field(fields)}"
            )
        _zone(timezone)
        schedule = cls(cron_expression=text, timezone=timezone)
        # croniter accepts fields that no date satisfies ("0 0 30 2 *"); such
        # a spec would fail every later slot computation, so refuse it here.
        try:
            schedule.next_after(_EPOCH)
        except ValueError:
            raise ValueError(
                f"cron expression {expression!r} never matches a date"
            ) from None
        return schedule

    @classmethod
    def every(cls, period: Duration) -> Schedule:
        """A fixed-interval schedule of whole seconds (at least one).

        Raises:
            ValueError: the period is not a whole number of seconds >= 1.
        """
        delta = to_timedelta(period, what="Schedule.every")
        seconds = delta.total_seconds()
        if seconds < 1 or not float(seconds).is_integer():
            raise ValueError(
                f"Schedule.every needs a whole number of seconds, at least 1s; got {period!r}"
            )
        if seconds > _MAX_INTERVAL.total_seconds():
            raise ValueError(
                f"Schedule.every: {period!r} is too long (at most 1000 years)"
            )
        return cls(interval=timedelta(seconds=int(seconds)))

    def next_after(self, after: datetime) -> datetime:
        """The first slot strictly after `after` (an aware datetime), in UTC.

        Raises:
            ValueError: `after` is naive, or no slot follows it before year 10000.
        """
        if after.tzinfo is None:
            raise ValueError(f"slot arithmetic takes an aware datetime, got {after!r}")
        if self.interval is not None:
            period = int(self.interval.total_seconds())
            since = (after - _EPOCH).total_seconds()
            slot = (math.floor(since / period) + 1) * period
            # Float division can land one period early at a slot boundary.
            try:
                while _EPOCH + timedelta(seconds=slot) <= after:
                    slot += period
                return _EPOCH + timedelta(seconds=slot)
            except OverflowError:
                raise ValueError(
                    f"{self.describe()} has no slot after {after}"
                ) from None
        if self.cron_expression is None:
            raise ValueError("a Schedule is either a cron expression or an interval")
        local = after.astimezone(_zone(self.timezone))
        try:
            nxt: datetime = croniter(self.cron_expression, local).get_next(datetime)
        except CroniterBadDateError:
            raise ValueError(
                f"cron expression {self.cron_expression!r} has no slot after {after}"
            ) from None
        return nxt.astimezone(UTC)

    def describe(self) -> str:
        """A short human rendering, for tables (``cron 0 3 * * *`` / ``every 15m``)."""
        if self.interval is not None:
            return f"every {format_duration(self.interval)}"
        zone = "" if self.timezone == "UTC" else f" ({self.timezone})"
        return f"cron {self.cron_expression}{zone}"

    def to_json(self) -> dict[str, Any]:
        """The spec as stored in `harvest_schedules.spec`."""
        if self.interval is not None:
            return {"every": int(self.interval.total_seconds())}
        return {"cron": self.cron_expression, "timezone": self.timezone}

    @classmethod
    def from_json(cls, data: Any) -> Schedule:
        """Read a stored spec.

        Raises:
            ValueError: the stored spec is damaged.
        """
        if isinstance(data, Mapping) and "every" in data:
            return cls.every(data["every"])
        if isinstance(data, Mapping) and "cron" in data:
            return cls.cron(data["cron"], str(data.get("timezone") or "UTC"))
        raise ValueError(f"not a schedule spec: {data!r}")


@dataclass(frozen=True)
class WorkflowSchedule:
    """A schedule that starts runs of one workflow; the workflow name is its key.

    Only `workflow_name`, `schedule`, `input`, `max_active_runs`, `overlap`
    and `jitter` (accepted and ignored: one writer has no fleet to spread)
    take effect. Every other field of the core schedule is refused at once
    with `Unsupported("WorkflowSchedule.<field> — ...")`, never dropped.

    Raises:
        Unsupported: a field this backend cannot honour was set.
        ValueError: a bad workflow name, `max_active_runs` or `schedule`.
    """

    workflow_name: str
    schedule: Schedule
    input: Any = None
    max_active_runs: int = 1
    overlap: Overlap | str = Overlap.SKIP
    jitter: Duration | None = None
    catchup: bool | None = None
    catchup_policy: str | None = None
    calendar: Any = None
    end_at: datetime | None = None
    max_runs: int | None = None
    consecutive_failure_limit: int | None = None
    retry_policy: Any = None
    execution_timeout: Duration | None = None
    chain_execution_timeout: Duration | None = None
    all_writable_shards: bool | None = None
    dag_name: str | None = None
    queue_name: str | None = None

    def __post_init__(self) -> None:
        """Check the fields; refuse every field this backend cannot honour."""
        check_name(self.workflow_name, "schedule name")
        if not self.workflow_name.strip():
            raise ValueError("workflow_name must be non-empty text, got blank text")
        if not isinstance(self.schedule, Schedule):
            raise ValueError(
                "schedule must be Schedule.cron(...) or Schedule.every(...)"
            )
        if (
            not isinstance(self.max_active_runs, int)
            or isinstance(self.max_active_runs, bool)
            or self.max_active_runs < 1
        ):
            raise ValueError(
                f"max_active_runs must be an int >= 1, got {self.max_active_runs!r}"
            )
        if self.jitter is not None:
            to_timedelta(self.jitter, what="jitter")  # ignored, but never nonsense
        self._refuse_unsupported()
        object.__setattr__(self, "overlap", _overlap(self.overlap))
        payloads.check(self.input, "schedule input")

    def _refuse_unsupported(self) -> None:
        refusals: list[tuple[str, str]] = []
        if self.catchup:
            refusals.append(("catchup", "catch-up is off: after a gap one run fires"))
        if self.catchup_policy is not None and str(self.catchup_policy).lower() not in (
            "skip_all",
            "skipall",
        ):
            refusals.append(("catchup_policy", "only SkipAll is supported"))
        overlap = str(self.overlap).lower()
        if overlap in _REFUSED_OVERLAP:
            refusals.append(
                ("overlap", f"{overlap} is not supported: {_REFUSED_OVERLAP[overlap]}")
            )
        for name, why in (
            ("calendar", "calendar specs are not supported; use Schedule.cron"),
            ("end_at", "schedules have no end time on this backend"),
            ("max_runs", "schedules have no run budget on this backend"),
            (
                "consecutive_failure_limit",
                "failures do not pause a schedule on this backend",
            ),
            ("retry_policy", "set the retry on the @workflow instead"),
            ("execution_timeout", "set execution_timeout on the @workflow instead"),
            ("chain_execution_timeout", "chains have no timeout on this backend"),
            ("all_writable_shards", "one file has no shards"),
            ("dag_name", "DAGs are not supported by this backend"),
        ):
            if getattr(self, name) not in (None, False):
                refusals.append((name, why))
        if self.queue_name is not None and self.queue_name != "default":
            refusals.append(("queue_name", "only the default queue exists"))
        if refusals:
            name, why = refusals[0]
            raise Unsupported(feature=f"WorkflowSchedule.{name}", why=why)


def _overlap(value: Overlap | str) -> Overlap:
    try:
        return Overlap(str(value).lower())
    except ValueError:
        known = ", ".join(o.value for o in Overlap)
        raise ValueError(f"overlap must be one of {known}, got {value!r}") from None


def _zone(name: str) -> ZoneInfo:
    # A prefix of a real zone ("Europe") names a folder of the tz database, and ZoneInfo
    # then raises IsADirectoryError: an OSError, so it is caught with the lookup errors.
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        raise ValueError(f"unknown time zone {name!r}") from None


def next_fire_times(schedule: Schedule, after: datetime, n: int) -> list[datetime]:
    """The next `n` slots strictly after `after`, in UTC (a preview for forms).

    Raises:
        ValueError: `after` is naive or `n` is negative.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    slots: list[datetime] = []
    at = after
    for _ in range(n):
        at = schedule.next_after(at)
        slots.append(at)
    return slots


# A backfill covers at most this many slots (one transaction starts them all).
MAX_BACKFILL_SLOTS = 1000


def slots_between(schedule: Schedule, start: datetime, end: datetime) -> list[datetime]:
    """The slots from `start` to `end`, both included, oldest first: what a backfill starts.

    Raises:
        ValueError: more than MAX_BACKFILL_SLOTS slots in the range.
    """
    slots: list[datetime] = []
    cursor = start - timedelta(microseconds=1)
    while True:
        slot = schedule.next_after(cursor)
        if slot > end:
            return slots
        if len(slots) == MAX_BACKFILL_SLOTS:
            raise ValueError(
                f"backfill_schedule covers more than {MAX_BACKFILL_SLOTS} slots; "
                "split the range"
            )
        slots.append(slot)
        cursor = slot


def slot_seconds(slot: datetime) -> int:
    """A slot as Unix epoch seconds."""
    return math.floor((slot - _EPOCH).total_seconds())


def schedule_workflow_id(workflow_name: str, slot: datetime) -> str:
    """The workflow id of a slot's run: ``sched:<workflow>:<slot seconds>``."""
    return f"sched:{workflow_name}:{slot_seconds(slot)}"


def schedule_id_prefix(workflow_name: str) -> str:
    """The workflow-id prefix every run of a schedule shares."""
    return f"sched:{workflow_name}:"


_CRON_FIELDS = (
    ("minute", "0-59"),
    ("hour", "0-23"),
    ("day-of-month", "1-31"),
    ("month", "1-12 or jan-dec"),
    ("day-of-week", "0-6 or sun-sat"),
)


def _bad_field(fields: list[str]) -> str:
    """Which of five cron fields croniter refuses alone, as ": the hour field '25' ..."."""
    if len(fields) != len(_CRON_FIELDS):
        return ""
    for i, (name, allowed) in enumerate(_CRON_FIELDS):
        alone = ["*"] * len(_CRON_FIELDS)
        alone[i] = fields[i]
        if not croniter.is_valid(" ".join(alone)):
            return f": the {name} field {fields[i]!r} is not valid ({allowed})"
    return ""
