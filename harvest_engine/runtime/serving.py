"""The serving loop: a writer that runs itself, sleeping until the next due time or a wake.

`serve()` repeats one round (apply queued client commands, fire due
schedules, one pass over every run with ready work) while rounds make
progress, then sleeps until `next_wakeup()`, an in-process call's wake, a
commit by another process (`data_version`, checked every `poll_interval`)
or the stop event. A round that fails for one run logs the error under the
``harvest_engine`` logger and backs off; the server keeps running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.errors import HarvestError
from harvest_engine.runtime import commands

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from harvest_engine.runtime.runtime import SqliteRuntime

log = logging.getLogger("harvest_engine.serving")

# A round whose errors repeat waits this long, doubling up to the cap, so a
# broken run (unregistered workflow, divergence) never spins the loop.
ERROR_BACKOFF_FIRST = 0.05
ERROR_BACKOFF_CAP = 30.0

# Rounds in a row before the loop yields to a full sleep check, so a fleet
# that always has work cannot starve the stop event or the commands.
ROUNDS_BEFORE_CHECK = 64


class Waker:
    """The in-process wake of a serving loop; safe to call from any thread, served or not."""

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._guard = threading.Lock()

    def attach(self) -> asyncio.Event:
        """Bind to the running loop (the serving loop's); raise if one is bound already."""
        with self._guard:
            if self._event is not None:
                raise RuntimeError("this runtime is already serving")
            self._loop = asyncio.get_running_loop()
            self._event = asyncio.Event()
            return self._event

    def detach(self) -> None:
        """Unbind; later wakes do nothing until the next `serve`."""
        with self._guard:
            self._event = None
            self._loop = None

    def wake(self) -> None:
        """Wake the serving loop now (a no-op when nothing serves)."""
        with self._guard:
            event, loop = self._event, self._loop
        if event is None or loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            event.set()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(event.set)


@dataclass
class _ErrorLog:
    """What the loop already reported, so a run that keeps failing logs once per change."""

    seen: dict[str, str] = field(default_factory=dict)
    failing_rounds: int = 0

    def report(self, errors: Sequence[HarvestError]) -> None:
        now_seen: dict[str, str] = {}
        for error in errors:
            key = f"{type(error).__name__}:{getattr(error, 'exec_id', '')}"
            text = str(error)
            now_seen[key] = text
            if self.seen.get(key) == text:
                log.debug("still failing: %s", text)
            else:
                log.error(
                    "a run failed in the serving loop (retried with backoff): %s",
                    text,
                    exc_info=error,
                )
        self.seen = now_seen
        self.failing_rounds = self.failing_rounds + 1 if errors else 0

    def backoff(self) -> float:
        if not self.failing_rounds:
            return 0.0
        growth = 2.0 ** min(self.failing_rounds - 1, 20)
        return min(ERROR_BACKOFF_CAP, ERROR_BACKOFF_FIRST * growth)


class Server:
    """One `serve()` call: its settings, its stop flag and its work task."""

    def __init__(
        self,
        rt: SqliteRuntime,
        stop: asyncio.Event | None,
        poll_interval: Duration,
        grace: Duration,
    ) -> None:
        self.rt = rt
        self.stop = stop
        self.poll = to_timedelta(poll_interval, what="poll_interval").total_seconds()
        if self.poll <= 0:
            raise ValueError("poll_interval must be positive")
        self.grace = to_timedelta(grace, what="grace").total_seconds()
        self.stopping = False
        self.errors = _ErrorLog()
        self.wake: asyncio.Event | None = None

    async def run(self) -> None:
        """Serve until the stop event is set (then give bodies `grace`) or the task is cancelled."""
        self.wake = self.rt.waker.attach()
        work = asyncio.create_task(self._work())
        stopper = asyncio.create_task(self._wait_stop())
        try:
            done, _ = await asyncio.wait(
                {work, stopper}, return_when=asyncio.FIRST_COMPLETED
            )
            if work in done:
                work.result()  # an unexpected crash of the loop itself surfaces here
                return
            self.stopping = True
            self.wake.set()
            finished, _ = await asyncio.wait({work}, timeout=self.grace)
            if not finished:
                log.warning(
                    "serve: running bodies did not finish within %.3gs; they re-run later",
                    self.grace,
                )
        finally:
            stopper.cancel()
            work.cancel()
            await asyncio.gather(work, stopper, return_exceptions=True)
            self.rt.waker.detach()
            # A body cut off mid-run was claimed; it runs again on the next
            # serve or drive of this runtime, not only after a reopen.
            if not self.rt.store_closed:
                self.rt.store.requeue_claimed_tasks()

    async def _wait_stop(self) -> None:
        if self.stop is None:
            await asyncio.Event().wait()  # never set: only a cancel ends the serve
        else:
            await self.stop.wait()

    async def _work(self) -> None:
        assert self.wake is not None
        while not self.stopping:
            self.wake.clear()
            version = self.rt.store.data_version()
            progressed = False
            for _ in range(ROUNDS_BEFORE_CHECK):
                made, errors = await self._round()
                self.errors.report(errors)
                progressed = progressed or made
                if not made or errors or self.stopping:
                    break
                await asyncio.sleep(0)
            if self.stopping:
                return
            if progressed and not self.errors.failing_rounds:
                continue
            await self._sleep(version)

    async def _round(self) -> tuple[bool, list[HarvestError]]:
        """Client commands, due schedules, then one pass over every run; any progress."""
        rt = self.rt
        errors: list[HarvestError] = []
        try:
            applied = commands.apply_pending(rt)
            fired, fire_error = rt._fire_schedules(rt.clock.now())
            if fire_error is not None:
                errors.append(fire_error)
            passed, pass_errors = await rt._pass(rt.clock.now)
        except HarvestError as exc:  # a step that failed as a whole (storage)
            return False, [*errors, exc]
        return applied or fired or passed, errors + pass_errors

    async def _sleep(self, version: int) -> None:
        """Sleep until the next due time, a wake, another process's commit or the poll tick."""
        assert self.wake is not None
        loop = asyncio.get_running_loop()
        delay = self._delay()
        deadline = None if delay is None else loop.time() + delay
        while not self.wake.is_set():
            left = self.poll if deadline is None else deadline - loop.time()
            if left <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), timeout=min(self.poll, left))
            if self.rt.store.data_version() != version:
                return

    def _delay(self) -> float | None:
        """Seconds until the next due time (None: only a wake); never 0 after an idle round."""
        due = self.rt.next_wakeup()
        backoff = self.errors.backoff()
        if due is None:
            return backoff or None
        seconds = (due - self.rt.clock.now()).total_seconds()
        if seconds > 0:
            return max(seconds, backoff)
        # Due already, yet the round made no progress (or failed): wait for the
        # backoff, or one poll tick, rather than spinning on it.
        return backoff or self.poll


def next_wakeup(rt: SqliteRuntime) -> datetime | None:
    """The runtime's earliest due time (aware), or None when nothing waits."""
    return rt.store.earliest_due(rt.clock.now())
