"""The serving loop: a writer that runs itself, sleeping until the next due time or a wake.

`serve()` repeats one round (fire due schedules, one pass over every run
with ready work) while rounds make progress, then sleeps until
`next_wakeup()`, an in-process call's wake, or the stop event. A round
waiting on activity bodies stays in flight while others start beside it.
Client commands are applied by one applier as they arrive (a signal
with the decision it unblocks, in one commit: `commands.apply_one`); another
process's commit is seen by one poller of `data_version` every
`poll_interval`. A round that fails for one run logs the error under the
``harvest_engine`` logger and backs off; the server keeps running. A
database that stops answering (a Postgres restart, a dropped connection)
is a warning and a short backoff in every part of the loop, never its end
(`serving_errors`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from contextlib import suppress
from typing import TYPE_CHECKING

from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.errors import HarvestError
from harvest_engine.loop_readers import read_when_ready
from harvest_engine.runtime.serving import commands
from harvest_engine.runtime.serving.serving_errors import (
    STORAGE_BACKOFF_CAP,
    ErrorLog,
    backoff_after,
    warn_storage,
)
from harvest_engine.runtime.serving.wake_channel import drain_then, serve_wake_channel

if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from harvest_engine.runtime.serving.drivers import Driver

log = logging.getLogger("harvest_engine.serving")

# Rounds in a row before the loop yields to the event loop, so a fleet that
# always has work cannot starve the stop event or the command applier.
ROUNDS_BEFORE_CHECK = 64

# Rounds in flight at once: more start only while earlier ones wait on
# activity bodies (each round runs up to drivers.TASK_CONCURRENCY).
MAX_ROUNDS = 4

# With a commit watch, `data_version` is still read this often (seconds), in
# case a change slipped past the watch (a WAL file made anew, say).
WATCH_SAFETY_POLL = 1.0


class Server:
    """One `serve()` call: its settings, its stop flag and its work task."""

    def __init__(
        self,
        driver: Driver,
        stop: asyncio.Event | None,
        poll_interval: Duration,
        grace: Duration,
    ) -> None:
        self.driver = driver
        self.stop = stop
        self.poll = to_timedelta(poll_interval, what="poll_interval").total_seconds()
        if self.poll <= 0:
            raise ValueError("poll_interval must be positive")
        self.grace = to_timedelta(grace, what="grace").total_seconds()
        self.stopping = False
        self.errors = ErrorLog()
        self.wake: asyncio.Event | None = None
        self.commit = asyncio.Event()
        self.woke_by_time = False
        # The clock reading the latest round began with: a due time after it
        # came due while that round ran, so the round may not have seen it.
        self.round_began: datetime | None = None
        self._watch_failing = False
        self.inflight: set[asyncio.Task[tuple[bool, list[HarvestError]]]] = set()
        # Rounds in a row that moved nothing: due work that only polls (a run
        # awaiting a run that is not its child keeps its decision flag) reads
        # as due now, and a time-skipping clock (testing.WorkflowEnvironment)
        # tells such a wait from ready work by it.
        self.quiet_rounds = 0

    async def run(self) -> None:
        """Serve until the stop event is set (then give bodies `grace`) or the task is cancelled."""
        self.wake = self.driver.engine.waker.attach(self.commit)
        channel = serve_wake_channel(self.driver.store, self.commit.set)
        work = asyncio.create_task(self._work())
        applier = asyncio.create_task(self._commands())
        watcher = asyncio.create_task(self._watch_commits())
        beater = asyncio.create_task(self._heartbeat())
        stopper = asyncio.create_task(self._wait_stop())
        try:
            done, _ = await asyncio.wait(
                {work, applier, watcher, beater, stopper},
                return_when=asyncio.FIRST_COMPLETED,
            )
            for loop_task in done & {work, applier, watcher, beater}:
                loop_task.result()  # an unexpected crash of a loop itself surfaces here
                return
            self.stopping = True
            self.wake.set()
            await work
            if self.inflight:
                _, unfinished = await asyncio.wait(self.inflight, timeout=self.grace)
                if unfinished:
                    log.warning(
                        "serve: running bodies did not finish within %.3gs; "
                        "they re-run later",
                        self.grace,
                    )
        finally:
            rest = [stopper, beater, watcher, applier, work, *self.inflight]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)
            self.driver.engine.waker.detach()
            if channel is not None:
                channel()
            # A body cut off mid-run was claimed; it runs again on the next
            # serve or drive of this runtime, not only after a reopen.
            if not self.driver.engine.closed:
                try:
                    self.driver.store.requeue_claimed_tasks()
                except HarvestError as exc:  # the database is away: leases expire
                    warn_storage("serve: putting unfinished claims back", exc)

    async def _wait_stop(self) -> None:
        if self.stop is None:
            await asyncio.Event().wait()  # never set: only a cancel ends the serve
        else:
            await self.stop.wait()

    async def _work(self) -> None:
        """Start rounds while they make progress or something wakes the loop; sleep between.

        A round that waits on activity bodies stays in flight while the loop
        goes on: a timer that comes due, a signal or a command's new run
        starts another round beside it (up to MAX_ROUNDS), so one long body
        never holds the other runs back. Rounds share nothing but the store,
        whose claims let each task run once.
        """
        assert self.wake is not None
        inflight = self.inflight
        again = True
        streak = 0
        while not self.stopping:
            if again and len(inflight) < MAX_ROUNDS:
                self.wake.clear()
                inflight.add(asyncio.create_task(self._round()))
                again = False
                # Let the round reach its first await (its decisions commit)
                # before `_wait` reads the next due time: a woken run's
                # decision is not held behind that read.
                await asyncio.sleep(0)
            finished = await self._wait(inflight)
            for task in finished:
                inflight.discard(task)
                made, errors = task.result()
                self.errors.report(errors)
                streak = streak + 1 if made else 0
                self.quiet_rounds = 0 if made or errors else self.quiet_rounds + 1
                # Progress may have made more work ready: look again at once
                # (yielding every so often), unless the run keeps failing.
                if made and not errors:
                    again = True
                    if streak % ROUNDS_BEFORE_CHECK == 0:
                        await asyncio.sleep(0)
            if self.wake.is_set() or self.woke_by_time:
                again = True

    async def _wait(
        self, inflight: set[asyncio.Task[tuple[bool, list[HarvestError]]]]
    ) -> set[asyncio.Task[tuple[bool, list[HarvestError]]]]:
        """Wait for a round to end, a wake or the next due time; the rounds that ended.

        Sets `woke_by_time` when the due time passed. Commits by other
        processes reach this loop through the command applier's wake.
        """
        assert self.wake is not None
        self.woke_by_time = False
        if len(inflight) >= MAX_ROUNDS:  # at capacity: only an ending round matters
            done, _ = await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
            return done
        if self.wake.is_set():
            return {t for t in inflight if t.done()}
        asked = self.driver.clock.now()
        due = self._next_due()  # read once: is a round on it, and how long to sleep
        busy = due is not None and due <= self.driver.clock.now()
        delay = None if inflight and busy else self._delay(due, asked)
        loop = asyncio.get_running_loop()
        deadline = None if delay is None else loop.time() + delay
        waker = asyncio.create_task(self.wake.wait())
        try:
            while True:
                timeout = None if deadline is None else deadline - loop.time()
                if inflight:
                    # A round in flight may carry claims of other runs (their
                    # next activity) until it ends: look every poll tick.
                    timeout = self.poll if timeout is None else min(timeout, self.poll)
                watched: set[asyncio.Task[Any]] = {*inflight, waker}
                done, _ = await asyncio.wait(
                    watched,
                    timeout=None if timeout is None else max(0.0, timeout),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if done:
                    return {t for t in inflight if t.done()}
                if deadline is not None and loop.time() >= deadline:
                    self.woke_by_time = True
                    return set()
                if self.driver.group.has_carried:
                    self.woke_by_time = True
                    return set()
        finally:
            waker.cancel()

    def _next_due(self) -> datetime | None:
        """The runtime's next due time; now while the database does not answer.

        A failed read (a restarting server) counts as due: the next round
        meets the same failure, reports it and backs off, so the loop waits
        the storage backoff instead of sleeping forever or crashing.
        """
        try:
            return self.driver.next_wakeup()
        except HarvestError as exc:
            log.debug("next_wakeup failed: %s", exc)
            return self.driver.clock.now()

    async def _commands(self) -> None:
        """Apply client commands as they arrive, also while the run loop awaits bodies.

        Commands are applied between the run loop's awaits (each in its own
        transaction, never inside another), so a long activity body does not
        hold a client's start or signal back. One applier keeps arrival order.
        """
        assert self.wake is not None
        loop = asyncio.get_running_loop()
        failures = 0
        purge_at = 0.0
        while not self.stopping:
            self.commit.clear()
            quiet = not self.wake.is_set()
            try:
                applied, settled = commands.apply_batch(self.driver.engine, decide=True)
                failures = 0
            except HarvestError as exc:  # storage: the commands stay queued
                failures += 1
                if failures == 1:
                    warn_storage("serve: applying client commands", exc)
                await asyncio.sleep(
                    backoff_after(failures + 1, cap=STORAGE_BACKOFF_CAP)
                )
                continue
            if applied:
                if settled and quiet:  # runs decided, parked with no work: no pass
                    self.wake.clear()  # (drops their calls' wakes): the process idles
                else:
                    self.wake.set()  # the run loop drives what the commands changed
                await asyncio.sleep(0)
                if loop.time() >= purge_at:
                    purge_at = loop.time() + commands.PURGE_EVERY
                    self._purge_applied()
                if applied >= commands.APPLY_BATCH:
                    continue  # more may wait; a smaller batch took every one
            # A command queued meanwhile has set `commit` again.
            await self.commit.wait()

    async def _heartbeat(self) -> None:
        """Record a beat every HEARTBEAT_EVERY seconds, so a client can tell nobody serves.

        One cheap beat a second (not one per poll tick): a client's command
        that sees no recent beat raises NotServed at once instead of waiting
        out its timeout.
        """
        failing = False
        while not self.stopping:
            try:
                self.driver.store.beat_serving()
                failing = False
            except HarvestError as exc:  # the database is away: tried next beat
                if not failing:
                    warn_storage("serve: recording the heartbeat", exc)
                failing = True
            await asyncio.sleep(commands.HEARTBEAT_EVERY)

    def _purge_applied(self) -> None:
        """Purge old applied commands (after the run loop took what they changed)."""
        try:
            commands.purge_applied(self.driver.engine)
        except HarvestError as exc:  # tried again at the next PURGE_EVERY
            log.warning("purging applied client commands failed: %s", exc)

    async def _watch_commits(self) -> None:
        """Wake the applier when another process committed (a client queued a command).

        `data_version` (one cheap read) says whether another process
        committed. Where the store offers a commit watch (inotify on the
        file and its WAL), it is read when the file changes, at most once
        per `poll_interval`, and every `WATCH_SAFETY_POLL` seconds besides:
        an idle server then hardly wakes. Elsewhere it is read every
        `poll_interval`.
        """
        loop = asyncio.get_running_loop()
        watch = self.driver.store.open_commit_watch()
        changed = asyncio.Event()
        if watch is not None:
            reader = functools.partial(drain_then, watch, changed.set)
            if not read_when_ready(loop, watch.fd, reader):
                watch.close()  # a loop without readers (Windows' proactor): poll
                watch = None
        try:
            version = self._data_version(-1)
            while not self.stopping:
                if watch is None:
                    await asyncio.sleep(self.poll)
                else:
                    with suppress(TimeoutError):
                        async with asyncio.timeout(WATCH_SAFETY_POLL):
                            await changed.wait()
                    changed.clear()
                seen = self._data_version(version)
                if seen != version:
                    version = seen
                    self.commit.set()
                if watch is not None:
                    # Our own commits touch the file too: look at most once a
                    # poll tick, so a busy server is not woken per commit.
                    await asyncio.sleep(self.poll)
        finally:
            if watch is not None:
                loop.remove_reader(watch.fd)
                watch.close()

    def _data_version(self, last: int) -> int:
        """The store's data version; while the database does not answer, `last`.

        A lost connection is ridden out: the store reconnects on a later
        read, and the version read then differs, which wakes the applier
        to look at what queued meanwhile.
        """
        try:
            seen = self.driver.store.data_version()
        except HarvestError as exc:
            if not self._watch_failing:
                warn_storage("serve: watching for commits", exc)
            self._watch_failing = True
            return last
        if self._watch_failing:
            self._watch_failing = False
            self.commit.set()
        return seen

    async def _round(self) -> tuple[bool, list[HarvestError]]:
        """Due schedules, then one pass over every run; whether any made progress."""
        driver = self.driver
        errors: list[HarvestError] = []
        self.round_began = began = driver.clock.now()
        try:
            fired, fire_error = driver.fire_schedules(began)
            if fire_error is not None:
                errors.append(fire_error)
            passed, pass_errors = await driver.one_pass(driver.clock.now)
        except HarvestError as exc:  # a step that failed as a whole (storage)
            return False, [*errors, exc]
        return fired or passed, errors + pass_errors

    def _delay(self, due: datetime | None, asked: datetime) -> float | None:
        """Seconds until `due` (read at `asked`; None: only a wake); never 0 after an idle round."""
        backoff = self.errors.backoff()
        if due is None:
            return backoff or None
        seconds = (due - self.driver.clock.now()).total_seconds()
        if seconds > 0:
            return max(seconds, backoff)
        if not backoff and self._came_due_since_last_round(due, asked):
            return 0.0
        # Due already, yet the round made no progress (or failed): wait for the
        # backoff, or one poll tick, rather than spinning on it.
        return backoff or self.poll

    def _came_due_since_last_round(self, due: datetime, asked: datetime) -> bool:
        """Whether `due` passed after the latest round read the clock: no round has tried it.

        Such a time (a timer, a retry, a deadline) is not a stuck run:
        another round at once fires it, where waiting a poll tick would make
        it that much late. Work ready at once (a flagged run, a queued
        command) reads as due at the moment asked, `asked` or later: the
        round did see it, and could not take it (another worker holds the
        run, the command applier has yet to run), so it waits a poll tick.
        """
        return self.round_began is not None and self.round_began < due < asked
