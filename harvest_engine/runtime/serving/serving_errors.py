"""What the serving loop does with errors: log each once, back off, and ride out a lost database.

A run that keeps failing (unregistered workflow, divergence) is logged once
per change and retried with a backoff that doubles up to ERROR_BACKOFF_CAP.
A storage failure (a Postgres server restarting, a dropped connection, a full
disk) is not the run's fault: it is logged at warning, the store reconnects on
its next call, and the backoff stops at STORAGE_BACKOFF_CAP so the loop
resumes within seconds of the database coming back. The loop never ends on
either.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harvest_engine.errors import StorageError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harvest_engine.errors import HarvestError

log = logging.getLogger("harvest_engine.serving")

# A round whose errors repeat waits this long, doubling up to the cap, so a
# broken run (unregistered workflow, divergence) never spins the loop.
ERROR_BACKOFF_FIRST = 0.05
ERROR_BACKOFF_CAP = 30.0

# Rounds that failed only on storage retry at most this far apart: the
# database coming back (a restart, a failover) is noticed within seconds.
STORAGE_BACKOFF_CAP = 2.0


def backoff_after(failures: int, *, cap: float = ERROR_BACKOFF_CAP) -> float:
    """Seconds to wait after `failures` failures in a row: doubling from the first, capped."""
    if failures <= 0:
        return 0.0
    return min(cap, ERROR_BACKOFF_FIRST * 2.0 ** min(failures - 1, 20))


def storage_only(errors: Sequence[BaseException]) -> bool:
    """Whether every error is the storage's (the database away), none a run's own."""
    return bool(errors) and all(isinstance(e, StorageError) for e in errors)


def warn_storage(what: str, error: BaseException) -> None:
    """One warning line for a storage failure the loop rides out (it reconnects and retries)."""
    log.warning("%s: the database failed (%s); retrying with backoff", what, error)


@dataclass
class ErrorLog:
    """What the loop already reported, so a run that keeps failing logs once per change."""

    seen: dict[str, str] = field(default_factory=dict)
    failing_rounds: int = 0
    storage_failing: bool = False

    def report(self, errors: Sequence[HarvestError]) -> None:
        """Log the errors of one round that are new since the last round."""
        now_seen: dict[str, str] = {}
        for error in errors:
            key = f"{type(error).__name__}:{getattr(error, 'exec_id', '')}"
            text = str(error)
            now_seen[key] = text
            if self.seen.get(key) == text:
                log.debug("still failing: %s", text)
            elif isinstance(error, StorageError):
                warn_storage("serve", error)
            else:
                log.error(
                    "a run failed in the serving loop (retried with backoff): %s",
                    text,
                    exc_info=error,
                )
        if self.storage_failing and not errors:
            log.warning("serve: the database answers again; serving resumes")
        self.seen = now_seen
        self.failing_rounds = self.failing_rounds + 1 if errors else 0
        self.storage_failing = storage_only(errors)

    def backoff(self) -> float:
        """Seconds before the next round after the failures so far (0 after a clean round)."""
        cap = STORAGE_BACKOFF_CAP if self.storage_failing else ERROR_BACKOFF_CAP
        return backoff_after(self.failing_rounds, cap=cap)
