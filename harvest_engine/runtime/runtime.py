"""SqliteRuntime: the facade users open, register on, start, drive and read through."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from harvest_engine.clock import Clock, SystemClock
from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.errors import ExecutionNotFound, HarvestError, InvalidSignal, Stuck
from harvest_engine.names import MAX_NAME_CHARS
from harvest_engine.runtime import cancel as cancel_requests
from harvest_engine.runtime import drive_targets as children_drive
from harvest_engine.runtime import (
    listing,
    queries,
    retention,
    runs,
    schedule_actions,
    schedules,
    serving,
    signal_with_start,
    signals,
    starts,
    update_with_start,
    updates,
    waiting,
)
from harvest_engine.runtime.cache import InstanceCache
from harvest_engine.runtime.decide import Decider
from harvest_engine.runtime.drive_time import DriveTime
from harvest_engine.runtime.group_commit import GroupCommit
from harvest_engine.runtime.registry import ActivitySpec, Registry
from harvest_engine.runtime.settings import HistoryCaps, Settings, WorkflowLogPolicy
from harvest_engine.runtime.signals import send_signal
from harvest_engine.runtime.tasks import TaskRunner
from harvest_engine.states import ExecutionId, ExecutionOutcome, RunState
from harvest_engine.store.sqlite.faults import guard_public_methods
from harvest_engine.store.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from pathlib import Path
    from types import TracebackType

    from harvest_engine.authoring import ActivityInfo, WorkflowInfo
    from harvest_engine.events import HistoryEvent
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.runtime.cycle import Decision
    from harvest_engine.schedules import WorkflowSchedule
    from harvest_engine.store.operations import LedgerTotals, ScheduleRow
    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.store.records import (
        ActivityAttempt,
        ExecutionDetail,
        ExecutionPage,
        LedgerRow,
    )
    from harvest_engine.workflow.stack import CoroutineStack
    from harvest_engine.workflow.waits import RunWait

log = logging.getLogger("harvest_engine.runtime")

# One drive call gives each run at most this many cycles, so a body that
# loops over activities forever cannot hold the caller for ever.
CYCLE_BUDGET = 100_000

Now = Callable[[], datetime]
_T = TypeVar("_T")

# How many runs' activity tasks one pass runs at the same time.
TASK_CONCURRENCY = 8


@guard_public_methods()
class SqliteRuntime:
    """An embedded workflow runtime on one SQLite file (or a private in-memory database).

    Open it, register the workflow and activity functions, start runs, and
    drive them with the async drivers. Registrations live in memory: a
    reopened runtime registers again and resumes every run by replay.

    Every public call raises typed errors only: a full disk or an I/O error
    is `StorageError`, a damaged file `DatabaseCorrupt`. A failed commit
    rolls back what the runtime holds in memory with it (cached instances,
    the claim of a task whose outcome was not recorded), so the next pass
    after the cause is gone finishes the work without a reopen.
    """

    def __init__(self, store: DurableStore, *, clock: Clock | None = None) -> None:
        self._store = store
        self.clock: Clock = clock or SystemClock()
        self.registry = Registry()
        self.settings = Settings()
        self.cache = InstanceCache()
        self._decider = Decider(store, self.registry, self.cache, self.settings)
        self._tasks = TaskRunner(store, self.registry)
        self._group = GroupCommit(
            store, self._decider, self._tasks, self.cache, self.settings
        )
        self._closed = False
        # A write that storage failed may have carried any run's cycle (one
        # run's, or a batch's): no cached instance may run ahead of the file.
        store.add_rollback_listener(lambda _error: self.cache.clear())
        self.waker = serving.Waker()

    # -- opening ------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, *, clock: Clock | None = None) -> SqliteRuntime:
        """Open (or create) a database file; raise DatabaseLocked if another runtime holds it."""
        clock = clock or SystemClock()
        return cls(SqliteStore.open(path, now=clock.now()), clock=clock)

    @classmethod
    def open_in_memory(
        cls, *, clock: Clock | None = None, uri: str | None = None
    ) -> SqliteRuntime:
        """A fresh, private, empty database that lives as long as the runtime.

        With `uri` (e.g. ``"file:demo?mode=memory&cache=shared"``) several
        connections of this process share one in-memory database; its writer
        lock is an owner row inside it, so a second runtime gets DatabaseLocked.
        """
        return cls(SqliteStore.open_memory(uri), clock=clock)

    def close(self) -> None:
        """Release the file and its writer lock (safe to call twice)."""
        if not self._closed:
            self._closed = True
            self.cache.clear()
            self._store.close()

    def __enter__(self) -> SqliteRuntime:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def store_closed(self) -> bool:
        """Whether `close()` ran (a stopping server then leaves the store alone)."""
        return self._closed

    @property
    def store(self) -> DurableStore:
        """The durable store (the runtime's concern modules take it)."""
        return self._store

    # -- registering --------------------------------------------------------------

    def register_workflow(self, fn: Callable[..., Any] | WorkflowInfo) -> None:
        """Register an @workflow function; refuses options this backend cannot honour."""
        self.registry.add_workflow(fn)
        self.waker.wake()  # a run that waited for its code can go on

    def register_activity(self, fn: Callable[..., Any] | ActivityInfo) -> None:
        """Register an @activity function to run its own body with an ActivityContext."""
        self.registry.add_activity(fn)

    def register_activity_with_body(
        self, fn: Callable[..., Any] | ActivityInfo, body: Callable[[Any], Any]
    ) -> None:
        """Register an activity's options with a sync ``body(input) -> output`` instead."""
        self.registry.add_activity(fn, body, mode="body")

    def register_activity_with_ledger(
        self, fn: Callable[..., Any] | ActivityInfo, body: Callable[[Any], Any]
    ) -> None:
        """Like `register_activity_with_body`; the body returns ``(output, [LlmCall])``."""
        self.registry.add_activity(fn, body, mode="ledger")

    def register_activity_raw(self, name: str, spec: ActivitySpec) -> None:
        """Register a hand-made body by name, without an ActivityInfo and without the audit."""
        self.registry.add_raw_activity(name, spec)

    def register_query(self, fn: Callable[..., Any]) -> None:
        """Register an @query(workflow=...) handler."""
        self.registry.add_handler(fn, "query")

    def register_update(self, fn: Callable[..., Any]) -> None:
        """Register an @update(workflow=...) handler."""
        self.registry.add_handler(fn, "update")

    # -- starting -----------------------------------------------------------------

    def start_workflow(self, name: str, input: Any = None) -> ExecutionId:
        """Start a fresh run; nothing executes until a drive."""
        return self._woken(starts.start_fresh(self, name, None, input))

    def start_workflow_with_id(
        self, name: str, workflow_id: str, input: Any = None
    ) -> ExecutionId:
        """Start with a business id, attaching to a RUNNING run of the same name and id."""
        return self._woken(starts.start_with_id(self, name, workflow_id, input))

    # -- driving ------------------------------------------------------------------

    async def run_until_blocked(self, exec_id: str | ExecutionId) -> RunState:
        """Drive one run until it ends or waits on outside input; its RunState.

        A run parked in `await_condition` whose registered signal handlers
        could make the condition true reports `RunState.WaitingSignal`
        naming those handlers.

        Raises:
            ExecutionNotFound: no run has that id.
            Stuck: the run is parked on nothing that can ever move it (no
                signal, timer, task, run, mutex or signal handler).
            NonDeterminismDetected / WorkflowPanicked: the code no longer
                replays, or raised a bug; the run stays RUNNING.
        """
        # The decision's own read of the row answers whether the run exists.
        return await self._run_until_blocked(self._id_text(exec_id), self.clock.now)

    async def run_until_blocked_as_of(
        self, exec_id: str | ExecutionId, when: datetime
    ) -> RunState:
        """`run_until_blocked` with every clock read at `when` (an aware datetime)."""
        fixed = _fixed(when, self.clock)
        return await self._run_until_blocked(self._id_text(exec_id), fixed)

    async def run_until_idle(self) -> None:
        """Drive every run until no pass makes progress; then raise the first run's error."""
        # Schedules fire on the first pass only, so a slow pass cannot meet
        # new slots without end; the next call fires them (guide §7).
        _, first_error = self._fire_schedules(self.clock.now())
        for _ in range(CYCLE_BUDGET):
            progressed, errors = await self._pass(self.clock.now)
            first_error = first_error or (errors[0] if errors else None)
            if not progressed:
                break
        if first_error is not None:
            raise first_error

    async def poll_once(self) -> bool:
        """One pass over every run needing a decision and every ready task; True if progress."""
        return await self._poll(self.clock.now)

    async def poll_once_as_of(self, when: datetime) -> bool:
        """`poll_once` with every clock read at `when`."""
        return await self._poll(_fixed(when, self.clock))

    async def _poll(self, now: Now) -> bool:
        fired, fire_error = self._fire_schedules(now())
        progressed, errors = await self._pass(now)
        error = fire_error or (errors[0] if errors else None)
        if error is not None:
            raise error
        return progressed or fired

    async def _pass(self, now: Now) -> tuple[bool, list[HarvestError]]:
        """Drive the fleet once; one failing run never blocks the others; every run's error.

        With group commit (the default), a pass decides, claims and records
        many runs per transaction (`group_commit.GroupCommit`); without, each
        decision, claim and completion is its own transaction.
        """
        if self.settings.group_commit:
            return await self._group.run_pass(now)
        progressed = False
        errors: list[HarvestError] = []
        for exec_id in self._store.runs_needing_decision(now()):
            try:
                decision = self._decider.decide(exec_id, now())
                progressed = progressed or decision.progressed
                if decision.stuck:
                    raise Stuck(exec_id=exec_id)
            except HarvestError as exc:
                errors.append(exc)
            # Each decision is its own transaction; yielding between them keeps a
            # host loop (the GUI's qasync loop) responsive over a pass of many runs.
            await asyncio.sleep(0)
        ran, task_errors = await self._run_ready_tasks(now)
        return progressed or ran, errors + task_errors

    async def _run_ready_tasks(self, now: Now) -> tuple[bool, list[HarvestError]]:
        """Run every ready task, runs side by side, each run's tasks in order.

        Different runs do not wait on each other's bodies (sync bodies run in
        worker threads), while one run's completions land in the same order
        on every drive, so its history does not depend on thread timing.
        """
        by_run: dict[str, list[Any]] = {}
        for task in self._store.ready_tasks(None, now()):
            by_run.setdefault(task.exec_id, []).append(task)
        gate = asyncio.Semaphore(TASK_CONCURRENCY)
        errors: list[HarvestError] = []

        async def run_in_order(tasks: list[Any]) -> bool:
            ran = False
            async with gate:
                for task in tasks:
                    try:
                        ran = await self._tasks.run(task, now) or ran
                    except HarvestError as exc:
                        errors.append(exc)
            return ran

        results = await asyncio.gather(
            *(run_in_order(tasks) for tasks in by_run.values())
        )
        return any(results), errors

    async def _run_until_blocked(
        self, exec_id: str, now: Now, visiting: frozenset[str] = frozenset()
    ) -> RunState:
        decision: Decision | None = None
        for _ in range(CYCLE_BUDGET):
            at = now()
            if decision is None:
                # A person asked for this run: a panic's backoff does not apply.
                decision = self._decide_one(exec_id, at)
            if decision.state is not None:
                return decision.state
            if self.settings.group_commit:
                # The run's tasks, recorded in one commit with its next decision.
                ran, stepped = await self._group.drive_step(exec_id, now, decision)
                if ran:
                    decision = stepped
                    continue
            else:
                tasks = self._store.ready_tasks(exec_id, at)
                if tasks:
                    for task in tasks:
                        await self._tasks.run(task, now)
                    decision = None
                    continue
            if await children_drive.drive_targets(
                self, decision.waiting_workflows, now, visiting | {exec_id}
            ):
                decision = None
                continue
            blocked = self._blocked(exec_id, decision, at)
            if blocked is not None:
                return blocked
            decision = None
        return RunState.InProgress()

    def _decide_one(self, exec_id: str, at: datetime) -> Decision:
        """One decision of the run a caller asked for (no panic backoff); claims with group commit."""
        if self.settings.group_commit:
            return self._group.decide_alone(exec_id, at, retry_panic_now=True)
        return self._decider.decide(exec_id, at, retry_panic_now=True)

    # -- serving ----------------------------------------------------------------

    async def serve(
        self,
        stop: asyncio.Event | None = None,
        *,
        poll_interval: Duration = "20ms",
        grace: Duration = "5s",
    ) -> None:
        """Drive the file until `stop` is set or the task is cancelled (see `runtime/serving.py`).

        Each round applies queued client commands, fires due schedules and
        drives every run with ready work; between rounds it sleeps until
        `next_wakeup()`, an in-process call (start, signal, cancel, ...), or
        a commit by another process (seen within `poll_interval`). On stop,
        running activity bodies get `grace` to finish; one cut off re-runs
        later (at-least-once). The runtime stays usable afterwards.

        Raises:
            ValueError: a bad duration.
            RuntimeError: this runtime is already serving.
        """
        await serving.Server(self, stop, poll_interval, grace).run()

    def next_wakeup(self) -> datetime | None:
        """The earliest due timer, backoff, schedule slot, deadline or queued command.

        An aware datetime (maybe in the past: work is ready now), or None
        when nothing waits for a time.
        """
        return serving.next_wakeup(self)

    def _woken(self, value: _T) -> _T:
        """Wake a serving loop after a call that made work; pass `value` through."""
        self.waker.wake()
        return value

    def _blocked(
        self, exec_id: str, decision: Decision, at: datetime
    ) -> RunState | None:
        """Where a parked run waits; None when it can go on at once."""
        if decision.inputs_left:
            return None
        wake = None if decision.idle else self._store.next_wakeup(exec_id)
        if wake is not None and wake <= at:
            return None
        if decision.waiting_signal is not None:
            return RunState.WaitingSignal(
                name=decision.waiting_signal, names=decision.waiting_signal_names
            )
        if decision.waiting_mutex is not None:
            return RunState.WaitingMutex(key=decision.waiting_mutex)
        if decision.waiting_workflow is not None:
            return RunState.WaitingWorkflow(
                exec_id=ExecutionId(decision.waiting_workflow)
            )
        if wake is not None or decision.waiting_timer:
            return RunState.WaitingTimer()
        if decision.stuck:
            raise Stuck(exec_id=exec_id)
        return RunState.WaitingTimer()

    # -- talking to runs ----------------------------------------------------------

    def send_signal(
        self, exec_id: str | ExecutionId, name: str, payload: Any = None
    ) -> None:
        """Stage a signal for a RUNNING run; the next drive appends it to history."""
        self._signal(exec_id, name, payload, None)
        self.waker.wake()

    def _signal(
        self, exec_id: str | ExecutionId, name: str, payload: Any, key: str | None
    ) -> bool:
        """`signals.send_signal`; its transaction's read of the row finds an unknown run."""
        text = self._id_text(exec_id)
        try:
            return send_signal(self._store, text, name, payload, key, self.clock.now())
        except InvalidSignal:
            self._require(text)  # an unknown run is reported first, as it was
            raise

    # -- reading ------------------------------------------------------------------

    def outcome(self, exec_id: str | ExecutionId) -> ExecutionOutcome:
        """The stored outcome, without driving."""
        row = self._store.execution(self._require(exec_id))
        if row is None:
            raise ExecutionNotFound(exec_id=exec_id)
        return runs.outcome_of(row, str(getattr(self._store, "path", "?")))

    def load_history(self, exec_id: str | ExecutionId) -> list[HistoryEvent]:
        """Every recorded event of the run, in order."""
        return self._store.load_events(self._require(exec_id))

    def activity_attempts(
        self, exec_id: str | ExecutionId, name: str | None = None
    ) -> list[ActivityAttempt]:
        """Finished attempts of the run's activities (of one name, or all)."""
        return self._store.activity_attempts(self._require(exec_id), name)

    def successor(self, exec_id: str | ExecutionId) -> ExecutionId | None:
        """The run that continued this one (continue-as-new or retry), if any."""
        row = self._store.execution(self._require(exec_id))
        return ExecutionId(row.successor) if row and row.successor else None

    def parent_execution(self, exec_id: str | ExecutionId) -> ExecutionId | None:
        """The parent of a child run, if any."""
        row = self._store.execution(self._require(exec_id))
        return ExecutionId(row.parent_exec_id) if row and row.parent_exec_id else None

    def describe(self, exec_id: str | ExecutionId) -> ExecutionDetail:
        """One run with its payloads as Stored values."""
        detail = self._store.describe(self._require(exec_id))
        if detail is None:
            raise ExecutionNotFound(exec_id=exec_id)
        return detail

    def llm_ledger(self, exec_id: str | ExecutionId) -> list[LedgerRow]:
        """The run's LLM calls, in recording order."""
        return self._store.llm_ledger(self._require(exec_id))

    # -- settings -----------------------------------------------------------------

    def set_history_caps(self, caps: HistoryCaps) -> None:
        """Set the hard caps on every run's history.

        Raises:
            TypeError: `caps` is not a HistoryCaps.
        """
        self.settings.set_caps(caps)

    def set_workflow_log_policy(self, policy: WorkflowLogPolicy | None) -> None:
        """Store `ctx.log` lines under `policy`; None stops storing them."""
        self.settings.log_policy = policy

    # -- helpers ------------------------------------------------------------------

    def _require(self, exec_id: str | ExecutionId) -> str:
        """The id as text; ExecutionNotFound when no run has it."""
        text = self._id_text(exec_id)
        if not self._store.exists(text):
            raise ExecutionNotFound(exec_id=exec_id)
        return text

    @staticmethod
    def _id_text(exec_id: str | ExecutionId) -> str:
        """The id as text; ExecutionNotFound for one no run could have (no read)."""
        text = str(exec_id).strip() if exec_id is not None else ""
        if not _could_be_id(text):
            raise ExecutionNotFound(exec_id=exec_id)
        return text

    # -- operating (issue 5) --------------------------------------------------------

    def list_executions(self, flt: ExecutionFilter | None = None) -> ExecutionPage:
        """One page of runs, newest first, without payloads (`page.next` pages on)."""
        return listing.list_executions(self._store, flt)

    def visit_executions(
        self, flt: ExecutionFilter | None, fn: Callable[[ExecutionDetail], object]
    ) -> int | None:
        """Call `fn` on each run of the page, with payloads, under one read snapshot; next cursor."""
        return listing.visit_executions(self._store, flt, fn)

    def counts_by_state(self) -> dict[str, int]:
        """How many runs are in each state."""
        return self._store.counts_by_state()

    def llm_totals(self, exec_id: str | ExecutionId) -> LedgerTotals:
        """The run's LLM calls summed: calls, tokens in and out, latency."""
        return self._store.llm_totals(self._require(exec_id))

    def upsert_schedule(self, schedule: WorkflowSchedule) -> ScheduleRow:
        """Store a schedule (keyed by workflow name); the same spec keeps its slot and pause."""
        return self._woken(schedules.upsert(self._store, schedule, self.clock.now()))

    def pause_schedule(self, workflow_name: str) -> bool:
        """Stop a schedule's fires; False when there is no such schedule."""
        return schedules.pause(self._store, workflow_name, self.clock.now())

    def resume_schedule(self, workflow_name: str) -> bool:
        """Fire again from the next slot after now; False when there is no such schedule."""
        return self._woken(
            schedules.resume(self._store, workflow_name, self.clock.now())
        )

    def delete_schedule(self, workflow_name: str) -> bool:
        """Remove a schedule (its runs keep running); False when there was none."""
        return schedules.delete(self._store, workflow_name)

    def trigger_schedule(self, workflow_name: str) -> ExecutionId | None:
        """Start one run of the schedule now; None when its overlap policy skips it.

        Raises:
            ScheduleNotFound: no schedule for `workflow_name`.
            UnknownWorkflow: the workflow is not registered.
        """
        exec_id = schedule_actions.trigger(
            self._store,
            workflow_name,
            self.clock.now(),
            schedules.runtime_starter(self),
        )
        return None if exec_id is None else ExecutionId(exec_id)

    def backfill_schedule(
        self, workflow_name: str, start: datetime, end: datetime
    ) -> list[ExecutionId]:
        """Start a run for each slot from `start` to `end` (both included), oldest first.

        Each run has its slot's workflow id; slots that already have a run are
        skipped, and so are slots a ``skip`` schedule's overlap policy drops.
        See `schedule_actions.backfill` for the errors.
        """
        started = schedule_actions.backfill(
            self._store,
            workflow_name,
            start,
            end,
            self.clock.now(),
            schedules.runtime_starter(self),
        )
        return [ExecutionId(exec_id) for exec_id in started]

    def list_schedules(self) -> list[ScheduleRow]:
        """Every stored schedule, by workflow name."""
        return self._store.list_schedules()

    def purge_terminal(self, older_than: Duration) -> int:
        """Remove terminal runs closed more than `older_than` ago, 256 per transaction."""
        return retention.purge_terminal(self._store, older_than, self.clock.now())

    def _fire_schedules(self, at: datetime) -> tuple[bool, HarvestError | None]:
        """Fire the due schedules at `at`; (whether a run started, the first error)."""
        started, error = schedules.fire_due(
            self._store,
            at,
            schedules.runtime_starter(self),
            schedules.is_registered(self),
        )
        return started > 0, error

    # -- talking to runs (issue 4): start policies, keyed signals, queries, updates ----

    def start_workflow_with_reuse_policy(
        self,
        name: str,
        workflow_id: str,
        input: Any,
        policy: starts.WorkflowIdReusePolicy,
    ) -> starts.StartOutcome:
        """Start under a workflow-id reuse policy; whether it attached or started fresh.

        The matrix (the prior is the newest run of the name and id; a RUNNING
        one wins; a blank id always starts fresh):

        | prior | ALLOW_DUPLICATE | ALLOW_DUPLICATE_FAILED_ONLY | REJECT_DUPLICATE | TERMINATE_IF_RUNNING |
        | --- | --- | --- | --- | --- |
        | none | fresh | fresh | fresh | fresh |
        | RUNNING | attach | attach | refused | replace |
        | COMPLETED | fresh | refused | refused | fresh |
        | FAILED, TIMED_OUT, CANCELLED | fresh | fresh | refused | fresh |
        | TERMINATED | fresh | fresh | fresh | fresh |

        Args:
            name: a registered workflow name.
            workflow_id: the business id (the reuse key).
            input: the start input (checked against the payload caps first).
            policy: a `WorkflowIdReusePolicy` (or its name).

        Returns:
            `StartOutcome(exec_id, started_fresh)`. An attach discards the input.

        Raises:
            WorkflowAlreadyStarted: the policy refused; it names the prior run.
            PayloadTooLarge, PayloadTooDeep: the input is over a cap (nothing persisted).
            UnknownWorkflow: `name` is not registered.
        """
        return self._woken(
            starts.start_with_policy(self, name, workflow_id, input, policy)
        )

    def start_workflow_with_options(
        self, name: str, input: Any, options: starts.StartOptions
    ) -> starts.StartOutcome:
        """Start with `StartOptions(workflow_id=, memo=, search_attributes=, reuse_policy=)`.

        The memo and the first search attributes are stored with a fresh run;
        a start that returns an existing run leaves them as they are.
        """
        return self._woken(starts.start_with_options(self, name, input, options))

    def signal_with_start(
        self, request: signal_with_start.SignalWithStart
    ) -> signal_with_start.SignalWithStartOutcome:
        """Signal the RUNNING run of the id, or start one and signal it, in one transaction.

        A key held by any run of the id stages nothing and starts nothing
        (`signal_delivered=False`). A RUNNING run with a pending cancel counts
        as CANCELLED; a fresh start over a closed prior seals it
        CONTINUED_AS_NEW. Blank id: BlankWorkflowId; a refused start:
        WorkflowAlreadyStarted; the input cap applies only when a run starts.
        """
        return self._woken(signal_with_start.signal_with_start(self, request))

    def send_signal_idempotent(
        self, exec_id: str | ExecutionId, name: str, payload: Any, key: str | None
    ) -> bool:
        """Stage a keyed signal; False when this run already holds `key` (also after it ended).

        An empty or None key is no key. A key starting with ``harvest.promise:``
        is InvalidSignal.
        """
        return self._woken(self._signal(exec_id, name, payload, key))

    def send_signal_by_workflow_id(
        self,
        workflow_name: str,
        workflow_id: str,
        name: str,
        payload: Any = None,
        key: str | None = None,
    ) -> signals.SignalDelivery:
        """Signal the RUNNING run of (workflow_name, workflow_id); where it went.

        Raises BlankWorkflowId, InvalidSignal, WorkflowIdNotFound (no run at
        all) or WorkflowNotRunning (the newest run is closed), in that order
        after the key probe: a key any run of the id holds returns
        ``SignalDelivery(holder, delivered=False)``.
        """
        return self._woken(
            signals.send_signal_by_workflow_id(
                self._store,
                workflow_name,
                workflow_id,
                name,
                payload,
                key,
                self.clock.now(),
            )
        )

    def query(
        self, exec_id: str | ExecutionId, name: str, arg: Any = None
    ) -> Coroutine[Any, Any, Any]:
        """Await the answer of query handler `name` at the run's frontier; writes nothing.

        The run's rows are read when this is called; awaiting replays them.
        A body handler (``ctx.register_query``) wins over an ``@query`` one.

        Raises (when awaited):
            ExecutionNotFound, QueryNotFound, QueryFailed, QueryTimedOut,
            NonDeterminismDetected.
        """
        try:
            text = self._require(exec_id)
        except ExecutionNotFound as exc:
            return queries.failing(exc)
        return queries.query(self, text, name, arg)

    async def update(
        self, exec_id: str | ExecutionId, name: str, arg: Any = None
    ) -> Any:
        """Run update `name(arg)`: validated, then recorded with its result in one transaction.

        The update does not drive the run; drive it afterwards.

        Raises:
            ExecutionNotFound, WorkflowNotRunning, UpdateInputInvalid,
            UpdateRejected (no event), UpdateFailed (an UpdateFailed event),
            UpdateTimedOut (no event), UpdateHistoryCapReached (the run failed
            at the cap), PayloadTooLarge / PayloadTooDeep for the input.
        """
        return self._woken(
            await updates.update(self, self._require(exec_id), name, arg)
        )

    async def update_with_start(
        self, request: update_with_start.UpdateWithStart
    ) -> update_with_start.UpdateWithStartOutcome:
        """Start (or attach to) the run of the id and run an update on it, in one transaction.

        The start, a fresh run's first decision and the update's events land
        together; an update that is rejected, invalid or fails still leaves
        the started run, and its typed error is raised.

        Raises:
            BlankWorkflowId, WorkflowAlreadyStarted, UnknownWorkflow,
            PayloadTooLarge / PayloadTooDeep (nothing written), then the
            update's errors as `update` raises them.
        """
        return self._woken(update_with_start.update_with_start(self, request))

    def where_waiting(self, exec_id: str | ExecutionId) -> tuple[RunWait, ...]:
        """What a running run is blocked on now (empty once it has ended); writes nothing.

        Replays the run to its frontier with the registered code: signal
        waits (with the payload type a `receive_signal` call or a handler
        declares), armed timers (due time), activities, children and awaited
        runs, mutex keys (runs ahead in the queue) and `await_condition`
        predicates, each with the user-code line that waits when known.

        Raises:
            ExecutionNotFound, UnknownWorkflow (the code is not registered),
            NonDeterminismDetected, HarvestError (the code raised before parking).
        """
        return waiting.where_waiting(
            self._store, self.registry, self.clock, self._require(exec_id)
        )

    def stack(self, exec_id: str | ExecutionId) -> tuple[CoroutineStack, ...]:
        """Where each of a running run's workflow coroutines is suspended in the user's code.

        The body's task first, then gather children and handler tasks; a
        body that raised (a panicking run) gives its traceback instead.
        Empty once the run has ended; writes nothing.

        Raises:
            ExecutionNotFound, UnknownWorkflow, NonDeterminismDetected,
            HarvestError (the code raised before parking).
        """
        return waiting.stack(
            self._store, self.registry, self.clock, self._require(exec_id)
        )

    def set_query_timeout(self, timeout: Duration) -> None:
        """How long a query may take from now on (default 5 s); a query already made keeps its own."""
        seconds = to_timedelta(timeout, what="query timeout").total_seconds()
        if seconds <= 0:
            raise ValueError("the query timeout must be positive")
        self.settings.query_timeout = seconds

    # -- run lifecycle (issue 3): cancel and terminate ----------------------------

    def cancel(self, exec_id: str | ExecutionId, reason: str = "") -> None:
        """Request a cooperative cancel; the next drive replays the body with the reason.

        The body sees ``ctx.cancellation_reason()`` from the start of that
        replay and may run cleanup activities; the run then ends CANCELLED.
        A repeat cancel keeps the first reason; a blank reason
        gets a default text. The request is stored, so it survives a reopen.

        Raises:
            ExecutionNotFound: no run has this id.
            WorkflowNotRunning: the run is terminal.
            TypeError: the reason is neither text nor None.
        """
        cancel_requests.request_cancel(
            self._store, self.cache, self._require(exec_id), reason, self.clock.now()
        )
        self.waker.wake()

    def terminate(self, exec_id: str | ExecutionId, reason: str = "") -> None:
        """End a run TERMINATED at once, in one transaction; its body does not run again.

        Appends WorkflowCancelled {reason}, drops its open rows (keyed signals
        stay), drops a pending cancel request and applies the parent-close
        policy of its detached children. A blank reason gets a default text.

        Raises:
            ExecutionNotFound: no run has this id.
            WorkflowNotRunning: the run is terminal.
            TypeError: the reason is neither text nor None.
        """
        cancel_requests.terminate(
            self._store, self.cache, self._require(exec_id), reason, self.clock.now()
        )
        self.waker.wake()


def _could_be_id(text: str) -> bool:
    """Whether any run could have this id: not blank, within the name cap, storable text."""
    if not text or len(text) > MAX_NAME_CHARS:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _fixed(when: datetime, clock: Clock) -> Now:
    if not isinstance(when, datetime) or when.tzinfo is None:
        raise ValueError(f"the *_as_of drivers take an aware datetime, got {when!r}")
    # Each reading carries the real clock's, for the stamps that must be real.
    return lambda: DriveTime.of(when, clock.now())
