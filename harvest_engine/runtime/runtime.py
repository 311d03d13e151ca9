"""Runtime: the facade users register on, start, drive and read through; it names no store.

`Runtime(store, clock=...)` is built on any `DurableStore`; the openers
(`SqliteRuntime.open`, `PostgresRuntime.connect`) name a store and build one.
The class is the table of the public surface: each call is one line into a
wing (`talking/talk.py`, `operating/reads.py`, `operating/operate.py`, the
serving `Driver` and `Server`), each of which takes the `Engine` (the
parts), never this facade. Imports point one way: openers -> this facade ->
serving -> operating -> talking -> engine -> deciding -> parts.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from harvest_engine.clock import Clock, SystemClock
from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.runtime.engine import Engine
from harvest_engine.runtime.flow import queues as flow_queues
from harvest_engine.runtime.operating import operate, reads
from harvest_engine.runtime.progress import reads as progress
from harvest_engine.runtime.repairing import bulk, pausing, restarts
from harvest_engine.runtime.serving import breakers
from harvest_engine.runtime.serving.drivers import Driver
from harvest_engine.runtime.serving.server import Server
from harvest_engine.runtime.talking import held_starts, talk
from harvest_engine.store.boundary import StoreBoundary

if TYPE_CHECKING:
    import asyncio
    from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
    from datetime import datetime
    from types import TracebackType

    from harvest_engine.authoring import ActivityInfo, WorkflowInfo
    from harvest_engine.calls import (
        SignalDelivery,
        SignalWithStart,
        SignalWithStartOutcome,
        StartOptions,
        StartOutcome,
        UpdateWithStart,
        UpdateWithStartOutcome,
        WorkflowIdReusePolicy,
    )
    from harvest_engine.events import HistoryEvent
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.flow import Queue, QueueInfo
    from harvest_engine.interceptors import Interceptor
    from harvest_engine.runtime.registry import ActivitySpec
    from harvest_engine.runtime.settings import HistoryCaps, WorkflowLogPolicy
    from harvest_engine.schedules import WorkflowSchedule
    from harvest_engine.shaping import BreakerInfo, HeldStart
    from harvest_engine.states import ExecutionId, ExecutionOutcome, RunState
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


# The facade names no store: at a failure it asks the store it holds what the error means.
_BOUNDARY = StoreBoundary(lambda runtime: runtime._engine.store.boundary)


@_BOUNDARY.guard_public_methods()
class Runtime:
    """An embedded workflow runtime on a durable store.

    Register the workflow and activity functions, start runs, and drive
    them with the async drivers. Registrations live in memory: a reopened
    runtime registers again and resumes every run by replay.

    Every public call raises typed errors only: a full disk or an I/O error
    is `StorageError`, a damaged file `DatabaseCorrupt`. A failed commit
    rolls back what the runtime holds in memory with it (cached instances,
    the claim of a task whose outcome was not recorded), so the next pass
    after the cause is gone finishes the work without a reopen.
    """

    def __init__(
        self,
        store: DurableStore,
        *,
        clock: Clock | None = None,
        interceptors: Iterable[Interceptor] = (),
    ) -> None:
        engine = Engine(store, clock or SystemClock(), interceptors)
        self._engine = engine
        self._driver = Driver(engine)
        # The parts users and the inspector read (rt.registry, rt.settings, ...).
        self.clock: Clock = engine.clock
        self.registry = engine.registry
        self.settings = engine.settings
        self.cache = engine.cache
        self.waker = engine.waker
        self.changes = engine.changes

    def close(self) -> None:
        """Release the file and its writer lock (safe to call twice)."""
        self._engine.close()

    def __enter__(self) -> Runtime:
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
        return self._engine.closed

    @property
    def store(self) -> DurableStore:
        """The durable store (the runtime's concern modules take it)."""
        return self._engine.store

    # -- registering --------------------------------------------------------------

    def register_workflow(self, fn: Callable[..., Any] | WorkflowInfo) -> None:
        """Register an @workflow function; refuses options this backend cannot honour."""
        info = self.registry.add_workflow(fn)
        flow_queues.store_workflow_limits(self._engine, info.name)
        self._driver.code_waits.code_registered(info.name)  # its due slot fires now
        self.waker.wake()  # a run that waited for its code can go on

    def register_activity(self, fn: Callable[..., Any] | ActivityInfo) -> None:
        """Register an @activity function to run its own body with an ActivityContext."""
        flow_queues.store_activity_limits(self._engine, self.registry.add_activity(fn))

    def register_activity_with_body(
        self, fn: Callable[..., Any] | ActivityInfo, body: Callable[[Any], Any]
    ) -> None:
        """Register an activity's options with a sync ``body(input) -> output`` instead."""
        added = self.registry.add_activity(fn, body, mode="body")
        flow_queues.store_activity_limits(self._engine, added)

    def register_activity_with_ledger(
        self, fn: Callable[..., Any] | ActivityInfo, body: Callable[[Any], Any]
    ) -> None:
        """Like `register_activity_with_body`; the body returns ``(output, [LlmCall])``."""
        added = self.registry.add_activity(fn, body, mode="ledger")
        flow_queues.store_activity_limits(self._engine, added)

    def register_activity_raw(self, name: str, spec: ActivitySpec) -> None:
        """Register a hand-made body by name, without an ActivityInfo and without the audit."""
        self.registry.add_raw_activity(name, spec)

    def register_queue(self, queue: Queue) -> None:
        """Declare a queue (or change its limits: the next admission applies them).

        Raises:
            TypeError: `queue` is not a Queue.
            InvalidFlowOption: a name with a reserved prefix.
        """
        self._driver.register_queue(queue)

    def queues(self) -> list[QueueInfo]:
        """Every queue: its limits, slots held, waiting runs or attempts, oldest wait."""
        return flow_queues.queues(self._engine)

    def register_query(self, fn: Callable[..., Any]) -> None:
        """Register an @query(workflow=...) handler."""
        self.registry.add_handler(fn, "query")

    def register_update(self, fn: Callable[..., Any]) -> None:
        """Register an @update(workflow=...) handler."""
        self.registry.add_handler(fn, "update")

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

    def set_query_timeout(self, timeout: Duration) -> None:
        """How long a query may take from now on (default 5 s); a query already made keeps its own."""
        seconds = to_timedelta(timeout, what="query timeout").total_seconds()
        if seconds <= 0:
            raise ValueError("the query timeout must be positive")
        self.settings.query_timeout = seconds

    # -- driving and serving (serving/drivers.py, serving/server.py) -------------

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
        return await self._driver.run_until_blocked(exec_id)

    async def run_until_blocked_as_of(
        self, exec_id: str | ExecutionId, when: datetime
    ) -> RunState:
        """`run_until_blocked` with every clock read at `when` (an aware datetime)."""
        return await self._driver.run_until_blocked_as_of(exec_id, when)

    async def run_until_idle(self) -> None:
        """Drive every run until no pass makes progress; then raise the first run's error."""
        await self._driver.run_until_idle()

    async def poll_once(self) -> bool:
        """One pass over every run needing a decision and every ready task; True if progress."""
        return await self._driver.poll_once()

    async def poll_once_as_of(self, when: datetime) -> bool:
        """`poll_once` with every clock read at `when`."""
        return await self._driver.poll_once_as_of(when)

    async def serve(
        self,
        stop: asyncio.Event | None = None,
        *,
        poll_interval: Duration = "20ms",
        grace: Duration = "5s",
    ) -> None:
        """Drive the store until `stop` is set or the task is cancelled (see `runtime/serving/server.py`).

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
        await Server(self._driver, stop, poll_interval, grace).run()

    def next_wakeup(self) -> datetime | None:
        """The earliest due timer, backoff, schedule slot, deadline or queued command.

        An aware datetime (maybe in the past: work is ready now), or None
        when nothing waits for a time.
        """
        return self._driver.next_wakeup()

    # -- held starts and circuit breakers (talking/held_starts.py, serving/breakers.py)

    def held_starts(self) -> list[HeldStart]:
        """The debounced and batched starts still waiting for their window, earliest due first.

        Each names the exec id its run will have (what every start of the
        window returned); until it starts, that id names no run.
        """
        return held_starts.held_starts(self._engine)

    def circuit_breakers(self) -> list[BreakerInfo]:
        """Each activity circuit breaker that has seen a failure: its state now."""
        return breakers.infos(self._engine.store, self.clock.now())

    # -- talking to runs (talking/talk.py): starts, signals, queries, updates ----

    def start_workflow(self, name: str, input: Any = None) -> ExecutionId:
        """Start a fresh run; nothing executes until a drive."""
        return talk.start_workflow(self._engine, name, input)

    def start_workflow_with_id(
        self, name: str, workflow_id: str, input: Any = None
    ) -> ExecutionId:
        """Start with a business id, attaching to a RUNNING run of the same name and id."""
        return talk.start_workflow_with_id(self._engine, name, workflow_id, input)

    def send_signal(
        self, exec_id: str | ExecutionId, name: str, payload: Any = None
    ) -> None:
        """Stage a signal for a RUNNING run; the next drive appends it to history."""
        return talk.send_signal(self._engine, exec_id, name, payload)

    def start_workflow_with_reuse_policy(
        self, name: str, workflow_id: str, input: Any, policy: WorkflowIdReusePolicy
    ) -> StartOutcome:
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
        return talk.start_workflow_with_reuse_policy(
            self._engine, name, workflow_id, input, policy
        )

    def start_workflow_with_options(
        self, name: str, input: Any, options: StartOptions
    ) -> StartOutcome:
        """Start with `StartOptions(workflow_id=, memo=, search_attributes=, reuse_policy=)`.

        The memo and the first search attributes are stored with a fresh run;
        a start that returns an existing run leaves them as they are.
        """
        return talk.start_workflow_with_options(self._engine, name, input, options)

    def signal_with_start(self, request: SignalWithStart) -> SignalWithStartOutcome:
        """Signal the RUNNING run of the id, or start one and signal it, in one transaction.

        A key held by any run of the id stages nothing and starts nothing
        (`signal_delivered=False`). A RUNNING run with a pending cancel counts
        as CANCELLED; a fresh start over a closed prior seals it
        CONTINUED_AS_NEW. Blank id: BlankWorkflowId; a refused start:
        WorkflowAlreadyStarted; the input cap applies only when a run starts.
        """
        return talk.signal_with_start(self._engine, request)

    def send_signal_idempotent(
        self, exec_id: str | ExecutionId, name: str, payload: Any, key: str | None
    ) -> bool:
        """Stage a keyed signal; False when this run already holds `key` (also after it ended).

        An empty or None key is no key. A key starting with ``harvest.promise:``
        is InvalidSignal.
        """
        return talk.send_signal_idempotent(self._engine, exec_id, name, payload, key)

    def send_signal_by_workflow_id(
        self,
        workflow_name: str,
        workflow_id: str,
        name: str,
        payload: Any = None,
        key: str | None = None,
    ) -> SignalDelivery:
        """Signal the RUNNING run of (workflow_name, workflow_id); where it went.

        Raises BlankWorkflowId, InvalidSignal, WorkflowIdNotFound (no run at
        all) or WorkflowNotRunning (the newest run is closed), in that order
        after the key probe: a key any run of the id holds returns
        ``SignalDelivery(holder, delivered=False)``.
        """
        return talk.send_signal_by_workflow_id(
            self._engine, workflow_name, workflow_id, name, payload, key
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
        return talk.query(self._engine, exec_id, name, arg)

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
        return await talk.update(self._engine, exec_id, name, arg)

    async def update_with_start(
        self, request: UpdateWithStart
    ) -> UpdateWithStartOutcome:
        """Start (or attach to) the run of the id and run an update on it, in one transaction.

        The start, a fresh run's first decision and the update's events land
        together; an update that is rejected, invalid or fails still leaves
        the started run, and its typed error is raised.

        Raises:
            BlankWorkflowId, WorkflowAlreadyStarted, UnknownWorkflow,
            PayloadTooLarge / PayloadTooDeep (nothing written), then the
            update's errors as `update` raises them.
        """
        return await talk.update_with_start(self._engine, request)

    # -- progress (progress/reads.py): events and streams of a run -------------------

    def events(self, exec_id: str | ExecutionId) -> dict[str, Any]:
        """Every event the run set with `ctx.set_event`: key to its last value."""
        return progress.events(self._engine, exec_id)

    async def get_event(
        self,
        exec_id: str | ExecutionId,
        key: str,
        timeout: Duration | None = None,  # noqa: ASYNC109 - API.md's contract
    ) -> Any:
        """Wait until the run sets event `key`; its value (None when the run ends without it, or at `timeout`).

        Awaitable, so a serving loop on the same event loop keeps running
        while it waits; a commit of this runtime wakes it at once.
        """
        return await progress.get_event(self._engine, exec_id, key, timeout)

    def read_stream(
        self, exec_id: str | ExecutionId, key: str, *, offset: int = 0
    ) -> AsyncIterator[tuple[int, Any]]:
        """``async for offset, value in rt.read_stream(exec_id, key):`` each value once, in order.

        Starts at `offset` (resume after the last offset seen + 1); ends
        when the stream is closed or the run has ended. A value written by a
        decision that rolled back is never seen.
        """
        return progress.read_stream(self._engine, exec_id, key, offset)

    # -- reading (operating/reads.py): runs, histories, ledgers, waits -----------

    def outcome(self, exec_id: str | ExecutionId) -> ExecutionOutcome:
        """The stored outcome, without driving."""
        return reads.outcome(self._engine, exec_id)

    def load_history(self, exec_id: str | ExecutionId) -> list[HistoryEvent]:
        """Every recorded event of the run, in order."""
        return reads.load_history(self._engine, exec_id)

    def activity_attempts(
        self, exec_id: str | ExecutionId, name: str | None = None
    ) -> list[ActivityAttempt]:
        """Finished attempts of the run's activities (of one name, or all)."""
        return reads.activity_attempts(self._engine, exec_id, name)

    def successor(self, exec_id: str | ExecutionId) -> ExecutionId | None:
        """The run that continued this one (continue-as-new or retry), if any."""
        return reads.successor(self._engine, exec_id)

    def parent_execution(self, exec_id: str | ExecutionId) -> ExecutionId | None:
        """The parent of a child run, if any."""
        return reads.parent_execution(self._engine, exec_id)

    def describe(self, exec_id: str | ExecutionId) -> ExecutionDetail:
        """One run with its payloads as Stored values."""
        return reads.describe(self._engine, exec_id)

    def llm_ledger(self, exec_id: str | ExecutionId) -> list[LedgerRow]:
        """The run's LLM calls, in recording order."""
        return reads.llm_ledger(self._engine, exec_id)

    def list_executions(self, flt: ExecutionFilter | None = None) -> ExecutionPage:
        """One page of runs, newest first, without payloads (`page.next` pages on)."""
        return reads.list_executions(self._engine, flt)

    def visit_executions(
        self, flt: ExecutionFilter | None, fn: Callable[[ExecutionDetail], object]
    ) -> int | None:
        """Call `fn` on each run of the page, with payloads, under one read snapshot; next cursor."""
        return reads.visit_executions(self._engine, flt, fn)

    def counts_by_state(self) -> dict[str, int]:
        """How many runs are in each state."""
        return reads.counts_by_state(self._engine)

    def llm_totals(self, exec_id: str | ExecutionId) -> LedgerTotals:
        """The run's LLM calls summed: calls, tokens in and out, latency."""
        return reads.llm_totals(self._engine, exec_id)

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
        return reads.where_waiting(self._engine, exec_id)

    def stack(self, exec_id: str | ExecutionId) -> tuple[CoroutineStack, ...]:
        """Where each of a running run's workflow coroutines is suspended in the user's code.

        The body's task first, then gather children and handler tasks; a
        body that raised (a panicking run) gives its traceback instead.
        Empty once the run has ended; writes nothing.

        Raises:
            ExecutionNotFound, UnknownWorkflow, NonDeterminismDetected,
            HarvestError (the code raised before parking).
        """
        return reads.stack(self._engine, exec_id)

    # -- operator actions (operating/operate.py): schedules, retention, cancel ---

    def upsert_schedule(self, schedule: WorkflowSchedule) -> ScheduleRow:
        """Store a schedule (keyed by workflow name); the same spec keeps its slot and pause.

        Raises:
            UnknownWorkflow: this runtime has no such workflow registered (a
                misspelt name would be stored and never fire); nothing is written.
        """
        return operate.upsert_schedule(self._engine, schedule)

    def pause_schedule(self, workflow_name: str) -> bool:
        """Stop a schedule's fires; False when there is no such schedule."""
        return operate.pause_schedule(self._engine, workflow_name)

    def resume_schedule(self, workflow_name: str) -> bool:
        """Fire again from the next slot after now; False when there is no such schedule."""
        return operate.resume_schedule(self._engine, workflow_name)

    def delete_schedule(self, workflow_name: str) -> bool:
        """Remove a schedule (its runs keep running); False when there was none."""
        return operate.delete_schedule(self._engine, workflow_name)

    def trigger_schedule(self, workflow_name: str) -> ExecutionId | None:
        """Start one run of the schedule now; None when its overlap policy skips it.

        Raises:
            ScheduleNotFound: no schedule for `workflow_name`.
            UnknownWorkflow: the workflow is not registered.
        """
        return operate.trigger_schedule(self._engine, workflow_name)

    def backfill_schedule(
        self, workflow_name: str, start: datetime, end: datetime
    ) -> list[ExecutionId]:
        """Start a run for each slot from `start` to `end` (both included), oldest first.

        Each run has its slot's workflow id; slots that already have a run are
        skipped, and so are slots a ``skip`` schedule's overlap policy drops.
        See `schedule_actions.backfill` for the errors.
        """
        return operate.backfill_schedule(self._engine, workflow_name, start, end)

    def list_schedules(self) -> list[ScheduleRow]:
        """Every stored schedule, by workflow name."""
        return operate.list_schedules(self._engine)

    def purge_terminal(self, older_than: Duration) -> int:
        """Remove terminal runs closed more than `older_than` ago, 256 per transaction."""
        return operate.purge_terminal(self._engine, older_than)

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
        return operate.cancel(self._engine, exec_id, reason)

    def terminate(self, exec_id: str | ExecutionId, reason: str = "") -> None:
        """End a run TERMINATED at once, in one transaction; its body does not run again.

        Appends WorkflowCancelled {reason, imposed}, drops its open rows (keyed signals
        stay), drops a pending cancel request and applies the parent-close
        policy of its detached children. A blank reason gets a default text.

        Raises:
            ExecutionNotFound: no run has this id.
            WorkflowNotRunning: the run is terminal.
            TypeError: the reason is neither text nor None.
        """
        return operate.terminate(self._engine, exec_id, reason)

    # -- repairing and steering runs (repairing/): reset, fork, pause, bulk ------

    def reset(
        self,
        exec_id: str | ExecutionId,
        *,
        to_event: int | None = None,
        reason: str,
    ) -> ExecutionId:
        """Start the run again from a decision boundary with today's code; the new run's id.

        The new run has the same workflow id, and its history is the old
        one's up to `to_event` (default: just before the first attempt of the
        last failed activity, or the last decision of a run with no failed
        activity); its next decision runs the registered code from there. The
        old run ends TERMINATED with `reason` if it was still running (so does
        another RUNNING run of the workflow id, as in Temporal); the
        signals it received after the point are staged again for the new
        run. `describe()` links them (`reset_to`, `reset_from`). One
        transaction: a crash leaves the old run as it was, or the move whole.

        Raises:
            ExecutionNotFound: no run has this id.
            NotResettable: the run was never decided.
            InvalidResetPoint: `to_event` is not a decision boundary (the
                message lists the boundaries).
            TypeError: the reason is not text.
        """
        return restarts.reset(self._engine, exec_id, to_event, reason)

    def fork(
        self,
        exec_id: str | ExecutionId,
        *,
        from_step: int,
        workflow_id: str | None = None,
    ) -> ExecutionId:
        """A new run that keeps the results of the first `from_step - 1` activity steps; its id.

        Steps are the run's activity schedulings in history order (1-based);
        the copied steps never run again, step `from_step` and what follows
        run with today's code. The old run is untouched; the new one has
        `workflow_id` (default: its own new id) and `describe().forked_from`.

        Raises:
            ExecutionNotFound, NotResettable (never decided),
            InvalidResetPoint (`from_step` is not a step of the run).
        """
        return restarts.fork(self._engine, exec_id, from_step, workflow_id)

    def pause(self, exec_id: str | ExecutionId, reason: str) -> None:
        """Stop a RUNNING run from deciding and from starting new attempts until `unpause`.

        Attempts already running finish and record; signals, updates' inputs
        and timers that come meanwhile wait and apply at the unpause.
        `describe().paused`, the list and `ExecutionFilter().paused()` show it.

        Raises:
            ExecutionNotFound, WorkflowNotRunning (a closed run), TypeError.
        """
        pausing.pause(self._engine, exec_id, reason)

    def unpause(self, exec_id: str | ExecutionId) -> None:
        """Let a paused run go on (a run that is not paused is left as it is).

        Raises:
            ExecutionNotFound, WorkflowNotRunning (a closed run).
        """
        pausing.unpause(self._engine, exec_id)

    def cancel_many(self, flt: ExecutionFilter, reason: str) -> int:
        """Request a cancel of every RUNNING run `flt` matches; how many (see `repairing/bulk.py`)."""
        return bulk.cancel_many(self._engine, flt, reason)

    def terminate_many(self, flt: ExecutionFilter, reason: str) -> int:
        """Terminate every RUNNING run `flt` matches; how many."""
        return bulk.terminate_many(self._engine, flt, reason)

    def signal_many(self, flt: ExecutionFilter, name: str, payload: Any = None) -> int:
        """Signal every RUNNING run `flt` matches once (a repeat stages nothing twice); how many."""
        return bulk.signal_many(self._engine, flt, name, payload)

    def reset_many(self, flt: ExecutionFilter, *, reason: str) -> int:
        """Reset every run `flt` matches that was not reset before, each to its default point."""
        return bulk.reset_many(self._engine, flt, reason)

    def pause_many(self, flt: ExecutionFilter, reason: str) -> int:
        """Pause every RUNNING run `flt` matches; how many were paused now."""
        return bulk.pause_many(self._engine, flt, reason)

    def unpause_many(self, flt: ExecutionFilter) -> int:
        """Unpause every paused run `flt` matches; how many."""
        return bulk.unpause_many(self._engine, flt)
