"""The schedule editor's fields read into a `Schedule`, with the next fire times (pure, no Qt)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from harvest_engine import Schedule, next_fire_times

if TYPE_CHECKING:
    from harvest_engine import ScheduleRow

CRON = "cron"
INTERVAL = "interval"
PREVIEW_COUNT = 5


@dataclass(frozen=True)
class SpecCheck:
    """The spec fields read: a schedule and its next fires, or the error in words."""

    schedule: Schedule | None
    error: str | None = None
    next_fires: list[datetime] = field(default_factory=list)


def read_spec(
    kind: str, cron_text: str, timezone: str, interval_text: str, now: datetime
) -> SpecCheck:
    """Build the schedule the editor describes and preview its next five fires after `now`."""
    try:
        if kind == CRON:
            if not cron_text.strip():
                return SpecCheck(
                    None, "type a cron expression, e.g. 0 3 * * * (03:00 daily)"
                )
            schedule = Schedule.cron(cron_text, timezone.strip() or "UTC")
        else:
            text = interval_text.strip()
            if not text:
                return SpecCheck(None, "type an interval, e.g. 15m, 1h or 90s")
            value: str | float = float(text) if _is_number(text) else text
            schedule = Schedule.every(value)
    except (ValueError, KeyError, OSError) as exc:
        # OSError: a zone lookup that reaches the file system (the engine turns the
        # ones it knows into ValueError; this keeps any other one a message too).
        text = str(exc).strip("'\"") if isinstance(exc, KeyError) else str(exc)
        if "time zone" in text:
            text += " (an IANA name such as UTC, Europe/Paris or America/New_York)"
        return SpecCheck(None, text)
    return SpecCheck(schedule, None, next_fire_times(schedule, now, PREVIEW_COUNT))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def interval_text(schedule: Schedule) -> str:
    """An interval as the editor shows it (``15m``, ``90s``)."""
    seconds = int(schedule.interval.total_seconds()) if schedule.interval else 0
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def fields_of(row: ScheduleRow) -> dict[str, str]:
    """The editor fields for a stored schedule."""
    spec = row.schedule
    if spec is None:
        return {"kind": CRON, "cron": "", "timezone": "UTC", "interval": ""}
    if spec.interval is not None:
        return {
            "kind": INTERVAL,
            "cron": "",
            "timezone": "UTC",
            "interval": interval_text(spec),
        }
    return {
        "kind": CRON,
        "cron": spec.cron_expression or "",
        "timezone": spec.timezone,
        "interval": "",
    }
