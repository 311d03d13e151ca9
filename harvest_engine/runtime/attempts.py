"""RunningAttempts: the attempts this process runs now, so a cancel reaches their bodies.

A cancel names attempts by (exec id, activity id, attempt), never by task
id, which SQLite reuses (`store.rows.AttemptKey`): the write that cancels
(a run's cancel, terminate or reset, a handle's cancel) reads which of the
run's tasks were claimed when it committed and announces those
(`deciding/attempt_cancels.py`); the store hands the announcement to every
process's `cancel` after the commit (SQLite: at once, in process; Postgres:
a NOTIFY each worker's listening thread hears). An attempt claimed after
that commit is not named, so a cleanup activity of a cancelled run runs.

A notice may come before its body starts (claimed, waiting its turn in a
pass): it is kept a while, and the body is cancelled as it starts.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from harvest_engine.attempt_cancel import AttemptCancel
from harvest_engine.store.rows import AttemptKey

if TYPE_CHECKING:
    from collections.abc import Iterable

    from harvest_engine.store.rows import TaskRecord

# How long a notice for an attempt this process has not started is kept (s).
NOTICE_MEMORY = 60.0
# At most this many such notices are kept (a bulk cancel of many runs).
NOTICE_LIMIT = 100_000

Key = AttemptKey


class RunningAttempts:
    """The cancels of this process's running attempts, by (exec id, activity id, attempt)."""

    def __init__(self) -> None:
        self._running: dict[Key, AttemptCancel] = {}
        self._notices: dict[Key, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def start(self, task: TaskRecord) -> AttemptCancel:
        """The cancel of an attempt about to run (already cancelled when a notice came first)."""
        cancel = AttemptCancel()
        key = (task.exec_id, task.activity_id, task.attempt)
        with self._lock:
            self._running[key] = cancel
            notice = self._notices.pop(key, None) if self._notices else None
        if notice is not None:
            cancel.cancel(notice[1])
        return cancel

    def finish(self, task: TaskRecord) -> None:
        """The attempt's body has ended: no cancel can reach it any more."""
        with self._lock:
            self._running.pop((task.exec_id, task.activity_id, task.attempt), None)

    def cancel(self, attempts: Iterable[Key], reason: str) -> None:
        """Cancel these attempts (from any thread); a store's cancel listener."""
        self.reach(attempts, reason)

    def reach(self, attempts: Iterable[Key], reason: str) -> int:
        """Cancel these attempts (from any thread); how many run here now."""
        reached: list[AttemptCancel] = []
        now = time.monotonic()
        with self._lock:
            for key in attempts:
                cancel = self._running.get(key)
                if cancel is not None:
                    reached.append(cancel)
                else:
                    self._remember(key, now, reason)
        for cancel in reached:
            cancel.cancel(reason)
        return len(reached)

    def running(self) -> int:
        """How many attempts run here now."""
        with self._lock:
            return len(self._running)

    def _remember(self, key: Key, now: float, reason: str) -> None:
        notices = self._notices
        if len(notices) >= NOTICE_LIMIT or (
            notices and next(iter(notices.values()))[0] < now - NOTICE_MEMORY
        ):
            cutoff = now - NOTICE_MEMORY
            for old in [k for k, (at, _) in notices.items() if at < cutoff]:
                del notices[old]
            while len(notices) >= NOTICE_LIMIT:
                del notices[next(iter(notices))]
        notices[key] = (now, reason)
