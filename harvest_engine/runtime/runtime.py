"""SqliteRuntime: the facade users open, register on, start, drive and read through.

The class holds the runtime's state, opening and registering; its other
calls live by concern (drivers.py, talking.py, reading.py,
operator_actions.py) as functions the class binds as its methods, so the
surface reads as one table here and a call costs what a method costs.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, TypeVar

from harvest_engine.clock import Clock, SystemClock
from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.errors import ExecutionNotFound
from harvest_engine.names import MAX_NAME_CHARS
from harvest_engine.runtime import (
    drivers,
    operator_actions,
    reading,
    schedules,
    talking,
)
from harvest_engine.runtime.cache import InstanceCache
from harvest_engine.runtime.decide import Decider
from harvest_engine.runtime.group_commit import GroupCommit
from harvest_engine.runtime.registry import ActivitySpec, Registry
from harvest_engine.runtime.settings import HistoryCaps, Settings, WorkflowLogPolicy
from harvest_engine.runtime.tasks import TaskRunner
from harvest_engine.runtime.waker import Waker
from harvest_engine.store.sqlite.faults import guard_public_methods
from harvest_engine.store.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from types import TracebackType

    from harvest_engine.authoring import ActivityInfo, WorkflowInfo
    from harvest_engine.states import ExecutionId
    from harvest_engine.store.protocol import DurableStore

log = logging.getLogger("harvest_engine.runtime")

_T = TypeVar("_T")


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
        self.waker = Waker()
        self._code_waits = schedules.CodeWaits()

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
        info = self.registry.add_workflow(fn)
        self._code_waits.code_registered(info.name)  # its due slot fires now
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

    # -- the surface by concern: functions bound as methods, one call each ----------

    # talking to runs (talking.py): starts, signals, queries, updates
    start_workflow = talking.start_workflow
    start_workflow_with_id = talking.start_workflow_with_id
    start_workflow_with_reuse_policy = talking.start_workflow_with_reuse_policy
    start_workflow_with_options = talking.start_workflow_with_options
    signal_with_start = talking.signal_with_start
    send_signal = talking.send_signal
    send_signal_idempotent = talking.send_signal_idempotent
    send_signal_by_workflow_id = talking.send_signal_by_workflow_id
    _signal = talking._signal
    query = talking.query
    update = talking.update
    update_with_start = talking.update_with_start

    # driving and serving (drivers.py)
    run_until_blocked = drivers.run_until_blocked
    run_until_blocked_as_of = drivers.run_until_blocked_as_of
    run_until_idle = drivers.run_until_idle
    poll_once = drivers.poll_once
    poll_once_as_of = drivers.poll_once_as_of
    serve = drivers.serve
    next_wakeup = drivers.next_wakeup
    _poll = drivers._poll
    _pass = drivers._pass
    _run_ready_tasks = drivers._run_ready_tasks
    _run_until_blocked = drivers._run_until_blocked
    _decide_one = drivers._decide_one
    _blocked = drivers._blocked
    _fire_schedules = drivers._fire_schedules

    # reading (reading.py): runs, histories, ledgers, waits
    outcome = reading.outcome
    load_history = reading.load_history
    activity_attempts = reading.activity_attempts
    successor = reading.successor
    parent_execution = reading.parent_execution
    describe = reading.describe
    llm_ledger = reading.llm_ledger
    list_executions = reading.list_executions
    visit_executions = reading.visit_executions
    counts_by_state = reading.counts_by_state
    llm_totals = reading.llm_totals
    where_waiting = reading.where_waiting
    stack = reading.stack

    # operator actions (operator_actions.py): schedules, retention, cancel
    upsert_schedule = operator_actions.upsert_schedule
    pause_schedule = operator_actions.pause_schedule
    resume_schedule = operator_actions.resume_schedule
    delete_schedule = operator_actions.delete_schedule
    trigger_schedule = operator_actions.trigger_schedule
    backfill_schedule = operator_actions.backfill_schedule
    list_schedules = operator_actions.list_schedules
    purge_terminal = operator_actions.purge_terminal
    cancel = operator_actions.cancel
    terminate = operator_actions.terminate

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

    def _woken(self, value: _T) -> _T:
        """Wake a serving loop after a call that made work; pass `value` through."""
        self.waker.wake()
        return value


def _could_be_id(text: str) -> bool:
    """Whether any run could have this id: not blank, within the name cap, storable text."""
    if not text or len(text) > MAX_NAME_CHARS:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
