"""Circuit breakers of activities: whether an attempt may run its body, and what its outcome does.

The state is the store's (`harvest_breakers`), so every worker on Postgres
shares it; on SQLite the one writer does. An attempt asks `turn` before
its body: a closed breaker costs one indexed read; an open one fails the
attempt fast with `CircuitOpen` until its cooldown ends; then the first
attempt takes the probe (a conditional write, so one worker gets it) and
the others keep failing fast. `record` runs in the transaction that
records the attempt's outcome: a failure within the window counts (the
last `failures` times are kept), and the one that makes `failures` within
the window opens the breaker for the cooldown; the probe's success closes
it, its failure reopens it. A probe whose worker died frees the probe
after one more cooldown. A CircuitOpen attempt's retry waits for the end
of the cooldown at least, so the wait costs no pass.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from harvest_engine.shaping import BreakerInfo
from harvest_engine.states import ErrorInfo
from harvest_engine.store.sql.shaping import BreakerRow
from harvest_engine.timestamps import to_text

if TYPE_CHECKING:
    from harvest_engine.shaping import CircuitBreaker
    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.store.txn_protocol import WriteTxn

CIRCUIT_OPEN = "CircuitOpen"
"""The error type of an attempt its open breaker refused."""


@dataclass(frozen=True)
class Turn:
    """What a breaker says to one attempt: run (maybe as the probe), or fail fast until `until`."""

    run: bool
    probe: bool = False
    until: datetime | None = None

    def error(self, activity: str) -> ErrorInfo:
        """The recorded error of an attempt refused by an open breaker."""
        until = "" if self.until is None else to_text(self.until)
        return ErrorInfo(
            type=CIRCUIT_OPEN,
            message=f"activity {activity!r}: circuit open until {until}",
        )


_RUN = Turn(run=True)


def turn(
    store: DurableStore, activity: str, breaker: CircuitBreaker, now: datetime
) -> Turn:
    """Whether an attempt of `activity` at `now` may run its body."""
    row = store.breaker(activity)
    if row is None or row.open_until is None:
        return _RUN
    if now < row.open_until:
        return Turn(run=False, until=row.open_until)
    cooldown = breaker.cooldown_delta
    with store.write() as txn:
        row = txn.breaker(activity)
        if row.open_until is None:
            return _RUN  # closed meanwhile by another worker's probe
        if now < row.open_until:
            return Turn(run=False, until=row.open_until)
        if row.probe_at is not None and now < row.probe_at + cooldown:
            return Turn(run=False, until=row.probe_at + cooldown)
        txn.put_breaker(replace(row, probe_at=now))
        return Turn(run=True, probe=True)


def record(
    txn: WriteTxn,
    activity: str,
    breaker: CircuitBreaker,
    *,
    failed: bool,
    probe: bool,
    error_type: str,
    now: datetime,
) -> None:
    """Count an attempt's outcome on its breaker, in the transaction that records it."""
    if error_type == CIRCUIT_OPEN:
        return  # a refused attempt is no evidence about the activity
    if not failed:
        if probe:
            txn.put_breaker(BreakerRow(activity, (), None, None))
        return  # a closed breaker's success writes nothing
    row = txn.breaker(activity)
    if row.open_until is not None:
        if probe:  # the probe failed: open for another cooldown
            opened = BreakerRow(activity, (), now + breaker.cooldown_delta, None)
            txn.put_breaker(opened)
        return  # an attempt begun before the breaker opened
    since = now - breaker.window_delta
    recent = (*(t for t in row.failures if t > since), now)[-breaker.failures :]
    if len(recent) >= breaker.failures:
        txn.put_breaker(BreakerRow(activity, (), now + breaker.cooldown_delta, None))
    else:
        txn.put_breaker(replace(row, failures=recent))


def not_before(error: ErrorInfo | None, until: datetime | None) -> datetime | None:
    """When a refused attempt's retry may run at the earliest (the end of the cooldown)."""
    return until if error is not None and error.type == CIRCUIT_OPEN else None


def info(row: BreakerRow, now: datetime) -> BreakerInfo:
    """A stored breaker as the facade's `circuit_breakers()` shows it at `now`."""
    if row.open_until is None:
        state = "CLOSED"
    elif now < row.open_until:
        state = "OPEN"
    else:
        state = "HALF_OPEN"
    return BreakerInfo(
        activity=row.activity,
        state=state,
        recent_failures=len(row.failures),
        open_until=row.open_until,
    )


def infos(store: DurableStore, now: datetime) -> list[BreakerInfo]:
    """Every stored breaker at `now` (the facade's `circuit_breakers`)."""
    return [info(row, now) for row in store.breakers()]
