"""What a database file holds and costs: sizes, runs and events per state, a purge suggestion."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from harvest_engine import ExecutionFilter

if TYPE_CHECKING:
    from harvest_engine import SqliteReader

TERMINAL_STATES = (
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TERMINATED",
    "TIMED_OUT",
    "CONTINUED_AS_NEW",
)
SCAN_LIMIT = 20_000
"""Runs whose events are counted; past it the counts say they are partial."""
SUGGEST_AGES = (
    timedelta(days=90),
    timedelta(days=30),
    timedelta(days=7),
    timedelta(days=1),
)


@dataclass(frozen=True)
class StorageReport:
    """A storage panel's numbers.

    Attributes:
        file_bytes: the database file.
        wal_bytes: its ``-wal`` file (0 when absent).
        runs_by_state: every run, per state (exact).
        events_by_state: events of the scanned runs, per state.
        scanned_runs: how many runs' events were counted.
        oldest_terminal: the earliest `closed_at` among the scanned terminal runs.
        purgeable: (age, runs closed longer ago than it) for a few ages.
        suggestion: one sentence.

    """

    file_bytes: int
    wal_bytes: int
    runs_by_state: dict[str, int]
    events_by_state: dict[str, int]
    scanned_runs: int
    oldest_terminal: datetime | None
    purgeable: list[tuple[timedelta, int]] = field(default_factory=list)
    suggestion: str = ""

    @property
    def total_runs(self) -> int:
        """All runs in the file."""
        return sum(self.runs_by_state.values())

    @property
    def partial(self) -> bool:
        """Whether the event counts cover only part of the runs."""
        return self.scanned_runs < self.total_runs


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def age_text(age: timedelta) -> str:
    """``90 days``, ``1 day``."""
    days = age.days
    return f"{days} day" if days == 1 else f"{days} days"


def storage_report(
    path: str | Path,
    reader: SqliteReader,
    *,
    now: datetime | None = None,
    scan_limit: int = SCAN_LIMIT,
) -> StorageReport:
    """Measure `path` through `reader` (newest runs scanned first, up to `scan_limit`).

    Runs in each state are counted exactly (`counts_by_state`); events are
    counted per scanned run from its history.
    """
    p = Path(path)
    now = now or datetime.now(UTC)
    runs = dict(reader.counts_by_state())
    events: dict[str, int] = {}
    closed: list[datetime] = []
    scanned = 0
    cursor: int | None = None
    while scanned < scan_limit:
        flt = ExecutionFilter().limit(min(1000, scan_limit - scanned))
        if cursor is not None:
            flt = flt.before(cursor)
        page = reader.list_executions(flt)
        for run in page.executions:
            n = len(reader.load_history(run.exec_id))
            events[run.state] = events.get(run.state, 0) + n
            if run.state in TERMINAL_STATES and run.closed_at is not None:
                closed.append(run.closed_at)
            scanned += 1
        cursor = page.next
        if cursor is None or not page.executions:
            break
    oldest = min(closed) if closed else None
    purgeable = [(age, sum(1 for c in closed if c < now - age)) for age in SUGGEST_AGES]
    return StorageReport(
        file_bytes=_size(p),
        wal_bytes=_size(p.with_name(p.name + "-wal")),
        runs_by_state=runs,
        events_by_state=events,
        scanned_runs=scanned,
        oldest_terminal=oldest,
        purgeable=purgeable,
        suggestion=suggest(purgeable, sum(runs.get(s, 0) for s in TERMINAL_STATES)),
    )


def suggest(purgeable: list[tuple[timedelta, int]], terminal: int) -> str:
    """A purge suggestion: the longest age that frees at least a quarter of the terminal runs."""
    if terminal == 0:
        return "Nothing to purge: the file holds no finished runs."
    for age, n in purgeable:
        if n and n * 4 >= terminal:
            return (
                f"Purge finished runs older than {age_text(age)}: "
                f"{n} of {terminal} finished runs would go."
            )
    fresh = purgeable[-1][1] if purgeable else 0
    if fresh:
        return f"{fresh} finished runs are older than a day; purging them frees little yet."
    return f"All {terminal} finished runs closed within the last day; nothing worth purging yet."


@dataclass(frozen=True)
class PurgePreview:
    """How many finished runs a purge at some cutoff would remove.

    Attributes:
        count: runs found closed before the cutoff.
        complete: False when the scan stopped at its limit (then `count` is a floor).

    """

    count: int
    complete: bool


def purge_preview(
    reader: SqliteReader, cutoff: datetime, *, limit: int = 100_000
) -> PurgePreview:
    """Count finished runs closed before `cutoff`, scanning each terminal state newest first."""
    count = 0
    seen = 0
    for state in TERMINAL_STATES:
        cursor: int | None = None
        while True:
            if seen >= limit:
                return PurgePreview(count, False)
            flt = ExecutionFilter().state(state).limit(1000)
            if cursor is not None:
                flt = flt.before(cursor)
            page = reader.list_executions(flt)
            for run in page.executions:
                seen += 1
                if run.closed_at is not None and run.closed_at < cutoff:
                    count += 1
            cursor = page.next
            if cursor is None or not page.executions:
                break
    return PurgePreview(count, True)
