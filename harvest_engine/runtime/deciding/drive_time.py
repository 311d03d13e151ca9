"""A drive's clock reading under `*_as_of`, carrying the real time for the stamps that must be real."""

from __future__ import annotations

from datetime import datetime


class DriveTime(datetime):
    """The time an `*_as_of` drive names, with the runtime clock's reading beside it.

    Everything a drive decides uses the named time (one clock per
    drive). A terminal write stamps `closed_at` from the real clock instead
    (Retention), so a drive "as of next week" cannot make a run
    look closed a week from now and keep `purge_terminal` off it. Arithmetic
    on it gives a `DriveTime` without `real`: only the reading itself has it.
    """

    real: datetime | None = None

    @classmethod
    def of(cls, when: datetime, real: datetime) -> DriveTime:
        """`when` as a drive time whose real clock read `real`."""
        stamped = cls(
            when.year,
            when.month,
            when.day,
            when.hour,
            when.minute,
            when.second,
            when.microsecond,
            tzinfo=when.tzinfo,
            fold=when.fold,
        )
        stamped.real = real
        return stamped


def real_time(now: datetime) -> datetime:
    """The runtime clock's reading behind `now` (`now` itself outside `*_as_of`)."""
    if isinstance(now, DriveTime) and now.real is not None:
        return now.real
    return now


def plain(now: datetime) -> datetime:
    """`now` as a plain datetime, for what workflow code reads (`ctx.system_now()`)."""
    if not isinstance(now, DriveTime):
        return now
    return datetime(
        now.year,
        now.month,
        now.day,
        now.hour,
        now.minute,
        now.second,
        now.microsecond,
        tzinfo=now.tzinfo,
        fold=now.fold,
    )
