"""purge_terminal: remove old terminal runs in short batches, one transaction each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.durations import Duration, to_timedelta

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.store.protocol import DurableStore

PURGE_BATCH = 256
"""Runs removed per transaction, so the writer never holds the file for long (guide §7)."""


def purge_terminal(store: DurableStore, older_than: Duration, now: datetime) -> int:
    """Remove every terminal run closed more than `older_than` before `now`.

    Each run goes with all its rows (events, tasks, timers, signals, attempts,
    logs, ledger, mutex places). RUNNING runs are never removed. `now` is the
    runtime clock, the one that stamps `closed_at`.

    Returns:
        How many runs were removed.
    """
    window = to_timedelta(older_than, what="purge_terminal older_than")
    try:
        cutoff = now - window
    except OverflowError:
        # A window reaching back past year 1: no run closed that long ago.
        return 0
    total = 0
    while True:
        with store.write() as txn:
            removed = txn.purge_terminal_batch(cutoff, PURGE_BATCH)
        total += removed
        if removed < PURGE_BATCH:
            return total
