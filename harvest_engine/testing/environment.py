"""WorkflowEnvironment: a served runtime on a ManualClock that skips to the next due time.

The environment opens a real SQLite file (a private temporary folder unless
`directory` names one), serves it in the background on a `ManualClock`, and
opens a `HarvestClient` on the same file. A served file, not an in-memory
database, because `restart()` must reopen what the runtime wrote and the
client talks to a served file through its command queue; a file in a
temporary folder costs a few milliseconds per test.

Time skipping: whenever no round is in flight and nothing is due now, the
clock jumps to `runtime.next_wakeup()` (the next timer, retry backoff,
schedule slot or deadline) and the server is woken, so a run waiting on a
30-day timer ends in milliseconds. With ``auto_time_skipping=False`` time
moves only through `env.sleep(duration)`, which fires every due time on
the way in order, then settles. Auto skipping never waits on a wall clock,
so a recurring schedule fires slot after slot as fast as the runs go: test
schedules with ``auto_time_skipping=False`` and `env.sleep`. The skipper
reads the serving loop's rounds in flight (a body still running is work,
not idleness), so the environment builds the loop `Runtime.serve` runs
itself.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from contextlib import asynccontextmanager, suppress
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvest_engine.authoring import ActivityInfo, info_of
from harvest_engine.client import HarvestClient
from harvest_engine.clock import ManualClock
from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.errors import UnknownActivity
from harvest_engine.runtime.serving.server import Server
from harvest_engine.runtime.sqlite_runtime import SqliteRuntime

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence
    from datetime import datetime

# How often (wall seconds) the skipper looks whether the runtime is idle.
IDLE_TICK = 0.002
# The serving loop's poll while a round is in flight (wall seconds).
POLL = "5ms"
DATABASE = "harvest-test.db"
# Quiet serving rounds in a row after which due-now work counts as waits that poll.
QUIET_ROUNDS = 2
# How far the skipper looks for a timed due time past waits that poll.
FAR_AHEAD = timedelta(days=365 * 100)
# Wall seconds `sleep` waits for due work to be done before it gives up.
SETTLE_LIMIT = 30.0


class WorkflowEnvironment:
    """A runtime, a client and a skipping clock for one test; use `WorkflowEnvironment.start`.

    `runtime` is the served SqliteRuntime (call it in process: start, signal,
    describe, ...); `client` a HarvestClient on the same file; `clock` the
    ManualClock both read.
    """

    def __init__(
        self,
        path: Path,
        workflows: Sequence[Callable[..., Any]],
        activities: Sequence[Callable[..., Any]],
        clock: ManualClock,
        *,
        auto_time_skipping: bool,
    ) -> None:
        self.path = path
        self.clock = clock
        self.auto_time_skipping = auto_time_skipping
        self._workflows = list(workflows)
        self._activities: dict[str, ActivityInfo] = {}
        for fn in activities:
            info: ActivityInfo = info_of(fn, ActivityInfo)
            self._activities[info.name] = info
        self._mocks: dict[str, Callable[..., Any]] = {}
        self._runtime: SqliteRuntime | None = None
        self._client: HarvestClient | None = None
        self._server: Server | None = None
        self._serving: asyncio.Task[None] | None = None
        self._skipping: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._time_lock = asyncio.Lock()

    @classmethod
    @asynccontextmanager
    async def start(
        cls,
        *,
        workflows: Sequence[Callable[..., Any]] = (),
        activities: Sequence[Callable[..., Any]] = (),
        directory: str | Path | None = None,
        clock: ManualClock | None = None,
        auto_time_skipping: bool = True,
    ) -> AsyncIterator[WorkflowEnvironment]:
        """Open, register and serve; on exit stop serving and close (and remove a temp folder).

        Args:
            workflows: @workflow functions to register.
            activities: @activity functions to register.
            directory: where the database file goes (default: a fresh temporary folder).
            clock: the ManualClock to read (default: one at 2030-01-01T00:00Z).
            auto_time_skipping: jump to the next due time whenever idle.

        Raises:
            TypeError: an entry of `workflows` or `activities` is not decorated as such.
        """
        owned = directory is None
        folder = (
            Path(tempfile.mkdtemp(prefix="harvest-env-"))
            if directory is None
            else Path(directory)
        )
        try:
            env = cls(
                folder / DATABASE,
                workflows,
                activities,
                clock or ManualClock(),
                auto_time_skipping=auto_time_skipping,
            )
        except BaseException:
            if owned:
                shutil.rmtree(folder, ignore_errors=True)
            raise
        try:
            env._open()
            env._client = HarvestClient.open(env.path)
            yield env
        finally:
            await env._close_runtime()
            if env._client is not None:
                env._client.close()
            if owned:
                shutil.rmtree(folder, ignore_errors=True)

    @property
    def runtime(self) -> SqliteRuntime:
        """The served runtime (a new one after each `restart`)."""
        if self._runtime is None:
            raise RuntimeError("the environment is not running")
        return self._runtime

    @property
    def client(self) -> HarvestClient:
        """A HarvestClient on the environment's file, answered by its serving runtime."""
        if self._client is None:
            raise RuntimeError("the environment is not running")
        return self._client

    def mock_activity(
        self, name_or_fn: str | Callable[..., Any], replacement: Callable[..., Any]
    ) -> None:
        """Run `replacement(ctx, input)` instead of a registered activity's body, also after restarts.

        The history records it as that activity, with its retry policy and
        timeouts; the replacement may be sync or async.

        Raises:
            UnknownActivity: no activity of that name (or function) was given to `start`.
            TypeError: `name_or_fn` is neither a name nor an @activity function,
                or `replacement` is not callable.
        """
        if isinstance(name_or_fn, str):
            name = name_or_fn
        else:
            name = info_of(name_or_fn, ActivityInfo).name
        if name not in self._activities:
            raise UnknownActivity(name=name, registered=self._activities)
        if not callable(replacement):
            raise TypeError(f"the replacement for {name!r} must be callable")
        self._mocks[name] = replacement
        self.runtime.registry.add_activity(self._activities[name], replacement)

    async def sleep(self, duration: Duration) -> None:
        """Move the clock forward by `duration`, firing every due time on the way in order.

        Raises:
            ValueError: a bad or negative duration.
        """
        step = to_timedelta(duration, what="duration")
        async with self._time_lock:
            target = self.clock.now() + step
            await self._settle()
            while (due := self._next_due()) is not None and due <= target:
                self._advance_to(due)
                await self._settle()
            self._advance_to(target)
            await self._settle()

    async def restart(self) -> None:
        """Drop the runtime (as a crash would, bodies cut off) and reopen the same file.

        The new runtime has the same workflows, activities and mocks, and
        resumes every run by replaying its history.
        """
        async with self._time_lock:
            await self._close_runtime()
            self._open()

    # -- serving and skipping ---------------------------------------------------

    def _open(self) -> None:
        rt = SqliteRuntime.open(self.path, clock=self.clock)
        try:
            for workflow in self._workflows:
                rt.register_workflow(workflow)
            for name, info in self._activities.items():
                rt.registry.add_activity(info, self._mocks.get(name))
        except BaseException:
            rt.close()
            raise
        self._runtime = rt
        self._stop = asyncio.Event()
        # The serving loop of `Runtime.serve`, built here so the skipper can
        # see whether a round (an activity body) is still in flight.
        self._server = Server(rt._driver, self._stop, POLL, "0s")  # noqa: SLF001
        self._serving = asyncio.create_task(self._server.run())
        self._skipping = asyncio.create_task(self._skip())

    async def _close_runtime(self) -> None:
        if self._skipping is not None:
            self._skipping.cancel()
            with suppress(asyncio.CancelledError):
                await self._skipping
        if self._serving is not None:
            self._stop.set()
            await self._serving
        if self._runtime is not None:
            self._runtime.close()
        self._runtime = self._server = self._serving = self._skipping = None

    async def _skip(self) -> None:
        """While auto skipping: whenever idle, jump the clock to the next due time."""
        while True:
            await asyncio.sleep(IDLE_TICK)
            if not self.auto_time_skipping or self._time_lock.locked():
                continue
            async with self._time_lock:
                due = self._next_due()
                if due is not None and self._idle(due):
                    self._advance_to(due)

    def _idle(self, due: datetime | None) -> bool:
        """No round in flight and nothing due now (or only waits that poll)."""
        assert self._server is not None
        if self._server.inflight:
            return False
        return due is None or due > self.clock.now() or self._only_polling()

    def _only_polling(self) -> bool:
        """Due now, yet rounds in a row moved nothing and nothing new came.

        A run that keeps its decision flag while it waits (staged signals
        past the byte room; an await whose target's row another Postgres
        transaction held) makes the next wakeup read as now; time must
        still skip to the timer that will move things. (A mutex waiter, a
        parent on its child and a watcher of a run keep none: they are woken.)
        """
        server = self._server
        assert server is not None
        return (
            server.quiet_rounds >= QUIET_ROUNDS
            and server.wake is not None
            and not server.wake.is_set()
            and not self.runtime.store.pending_commands(1)
        )

    def _next_due(self) -> datetime | None:
        due = self.runtime.next_wakeup()
        now = self.clock.now()
        if due is None or due > now or not self._only_polling():
            return due
        # The earliest due time past the flagged runs' "now": a timer, a
        # retry, a deadline or a schedule slot (None when there is none).
        far = now + FAR_AHEAD
        timed = self.runtime.store.earliest_due(far)
        return None if timed is None or timed >= far else timed

    def _advance_to(self, when: datetime) -> None:
        if when > self.clock.now():
            self.clock.set(when)
        self.runtime.waker.wake()

    async def _settle(self) -> None:
        """Wait until the server has done all the work ready at the current time."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + SETTLE_LIMIT
        quiet = 0
        while quiet < 2:  # twice in a row: a just-woken loop has had its turn
            if loop.time() > give_up:
                raise TimeoutError(
                    f"work stayed due for {SETTLE_LIMIT}s of wall time "
                    "(a body that never returns, or a run waiting for unregistered code?)"
                )
            await asyncio.sleep(IDLE_TICK)
            quiet = quiet + 1 if self._idle(self._next_due()) else 0
