"""DurableStore: the persistence boundary, in engine terms.

The runtime never writes SQL. It opens a write transaction with
`store.write()` and calls the `WriteTxn` methods inside it
(`store/txn_protocol.py`), so one decision is one transaction. Reads that
need no transaction are methods on the store. A second store (Postgres, for
many workers) implements the same protocol; the rows both protocols speak
in are in `store/rows.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from contextlib import AbstractContextManager
    from datetime import datetime

    from harvest_engine.events import HistoryEvent
    from harvest_engine.filters import ExecutionFilter
    from harvest_engine.store.boundary import Boundary
    from harvest_engine.store.operations import LedgerTotals, ScheduleRow
    from harvest_engine.store.records import (
        ActivityAttempt,
        ExecutionDetail,
        ExecutionPage,
        LedgerRow,
        LogLine,
        MutexRow,
        PendingTask,
        StagedSignal,
        StreamItem,
        TimerRow,
    )
    from harvest_engine.store.rows import (
        AttemptKey,
        CommandRecord,
        ExecutionRecord,
        TaskRecord,
    )
    from harvest_engine.store.sql.flow_reads import FlowReads
    from harvest_engine.store.sql.shaping import BreakerRow, HeldRow
    from harvest_engine.store.txn_protocol import WriteTxn


class CommitWatcher(Protocol):
    """A file descriptor that turns readable when another process may have committed."""

    fd: int

    def drain(self) -> None:
        """Read and drop what made the descriptor readable."""
        ...

    def close(self) -> None:
        """Stop watching."""
        ...


class WakeChannel(Protocol):
    """The serving end of a wake channel: a descriptor clients' datagrams make readable."""

    fd: int

    def heard(self) -> bool:
        """Read the clients' datagrams; True when one says a command was queued."""
        ...

    def committed(self) -> None:
        """Wake the clients heard lately (after a commit)."""
        ...

    def close(self) -> None:
        """Stop serving the channel."""
        ...


class DurableStore(Protocol):
    """The store the runtime drives; `SqliteStore` is today's implementation."""

    storage_errors: tuple[type[Exception], ...]
    """What this store raises when storage itself fails (never blamed on workflow code)."""

    boundary: Boundary
    """Which failures are this store's driver's own and the typed error each stands for."""

    bare_batches: bool
    """Whether a batch of many runs' decisions may go without savepoints, redone with them if one fails."""

    def add_rollback_listener(self, fn: Callable[[BaseException], None]) -> None:
        """Call `fn(error)` after any write transaction that storage failed is rolled back.

        The runtime drops what it keeps in memory of transactions in flight
        (its instance cache), whichever code path opened the transaction.
        """
        ...

    def add_cancel_listener(self, fn: Callable[[list[AttemptKey], str], None]) -> None:
        """Call `fn(attempts, reason)` for each cancel of attempts any write announced.

        `attempts` are (exec id, activity id, attempt) keys (`WriteTxn.announce_cancels`),
        heard after the announcing transaction commits: in process on a
        file, from every worker through NOTIFY on Postgres (from the
        listening thread, so `fn` must be thread-safe).
        """
        ...

    def release_claim(self, task_id: int) -> None:
        """Put a task this process claimed back to PENDING (its outcome was not recorded).

        Done by the next write that succeeds (or the next `ready_tasks`), so a
        task whose completion commit failed is not stranded RUNNING until a
        reopen.
        """
        ...

    def close(self) -> None:
        """Release the connection and the writer lock."""
        ...

    def write(self) -> AbstractContextManager[WriteTxn]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT, ROLLBACK on error)."""
        ...

    def claimed_task_ids(self, task_ids: Sequence[int]) -> set[int]:
        """Which of these tasks are still RUNNING (claimed, not yet recorded or dropped)."""
        ...

    def read_pass_ahead(
        self, now: datetime, carried: Sequence[int], flow: bool
    ) -> None:
        """Read a serving pass's reads at its start, where each costs a round trip.

        The held starts and schedules due, the runs needing a decision, the
        ready tasks, which of `carried` are still claimed, and with `flow`
        what waits in queues: each later read takes its answer until the
        next commit (Postgres, store/postgres/ahead.py); a no-op elsewhere.
        """
        ...

    def read_due_ahead(self, now: datetime, skip: Sequence[str], flow: bool) -> None:
        """As `read_pass_ahead`, for `earliest_due(now, skip_schedules=skip)` and the queues."""
        ...

    def execution(self, exec_id: str) -> ExecutionRecord | None:
        """A run's row, outside any transaction."""
        ...

    def exists(self, exec_id: str) -> bool:
        """Whether a run has this id (no row read: every drive and signal checks it)."""
        ...

    def load_events(self, exec_id: str, after_seq: int = 0) -> list[HistoryEvent]:
        """A run's events after `after_seq`."""
        ...

    def runs_needing_decision(self, now: datetime) -> list[str]:
        """RUNNING runs with new input (flagged, or a timer due), oldest first."""
        ...

    def ready_tasks(self, exec_id: str | None, now: datetime) -> list[TaskRecord]:
        """PENDING tasks whose ready time has come (of one run, or of all)."""
        ...

    def claim_task(self, task_id: int, now: datetime) -> TaskRecord | None:
        """Flip a PENDING task to RUNNING in its own transaction; None if gone."""
        ...

    def save_heartbeat(self, task_id: int, details: str) -> None:
        """Store an activity's latest heartbeat payload."""
        ...

    def next_wakeup(self, exec_id: str) -> datetime | None:
        """The earliest timer or task ready time of a run."""
        ...

    def earliest_due(
        self, now: datetime, *, skip_schedules: Sequence[str] = ()
    ) -> datetime | None:
        """The earliest due time over every run, schedule and queued command.

        The schedules and held starts of `skip_schedules` (workflows whose
        code the caller lacks) do not count.

        Timers, task ready times (retry backoff), execution deadlines, a
        flagged run's not-before time (`now` when it is ready at once),
        schedule slots and pending client commands (`now`); None when
        nothing waits. The serving loop sleeps until then.
        """
        ...

    def data_version(self) -> int:
        """A number that changes when another process commits to the store."""
        ...

    def add_commit_listener(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Call `fn()` after each commit of this store's writes; returns what removes it."""
        ...

    def open_wake_channel(self) -> WakeChannel | None:
        """The serving end of the file's wake channel (clients' wakes), or None.

        None where the store has none: an in-memory database, a platform
        without Unix sockets, Postgres (whose NOTIFY wakes its clients).
        """
        ...

    def open_commit_watch(self) -> CommitWatcher | None:
        """A descriptor that wakes a server on other processes' commits, or None.

        None when the store cannot tell (the server then polls
        `data_version`) or tells another way (Postgres's LISTEN/NOTIFY).
        """
        ...

    def write_together(
        self, *, savepoints: bool = True
    ) -> AbstractContextManager[WriteTxn]:
        """A write transaction that `write()` calls on this thread join until it ends.

        Each joined write is atomic on its own (its error undoes only its
        changes), and all of them commit together with the outer one.
        Without `savepoints` (a store may take the hint or not), a joined
        write may skip its savepoint: when it fails, the whole transaction
        rolls back and raises `JoinedWriteFailed`, and the caller runs it
        again with savepoints.
        """
        ...

    def pending_commands(self, limit: int) -> list[CommandRecord]:
        """Client commands not applied yet, in arrival order."""
        ...

    def headers_of(self, exec_id: str, kind: str, ref: str) -> str | None:
        """The headers (JSON text) stored with a run's start or an activity, or None."""
        ...

    def requeue_claimed_tasks(self) -> None:
        """Put every claimed task back to PENDING (a stopped server's unfinished bodies)."""
        ...

    def beat_serving(self) -> None:
        """Record that a process serves the store now (clients tell `NotServed` by its age)."""
        ...

    def activity_attempts(
        self, exec_id: str, name: str | None
    ) -> list[ActivityAttempt]:
        """Finished attempts of a run's activities (of one name, or all)."""
        ...

    def describe(self, exec_id: str) -> ExecutionDetail | None:
        """One run with payloads, as Stored values."""
        ...

    def list_executions(self, filter_: ExecutionFilter) -> ExecutionPage:
        """One page of runs, newest first."""
        ...

    def visit_executions(self, filter_: ExecutionFilter) -> Iterator[ExecutionDetail]:
        """Runs with payloads under one read snapshot."""
        ...

    def pending_tasks(self, exec_id: str) -> list[PendingTask]:
        """A run's unfinished tasks."""
        ...

    def timers(self, exec_id: str) -> list[TimerRow]:
        """A run's unfired timers."""
        ...

    def staged_signals(self, exec_id: str) -> list[StagedSignal]:
        """A run's undelivered signals."""
        ...

    def mutexes(self, exec_id: str) -> list[MutexRow]:
        """Mutex places a run holds or waits for."""
        ...

    def llm_ledger(self, exec_id: str) -> list[LedgerRow]:
        """A run's LLM ledger rows."""
        ...

    def workflow_logs(self, exec_id: str) -> list[LogLine]:
        """A run's workflow log lines."""
        ...

    # -- operating (issue 5) ----------------------------------------------------

    def flow_reads(self) -> AbstractContextManager[FlowReads]:
        """Flow-control reads (queues, waiting runs and attempts) for the block."""
        ...

    def counts_by_state(self) -> dict[str, int]:
        """How many runs are in each state."""
        ...

    def list_schedules(self) -> list[ScheduleRow]:
        """Every stored schedule."""
        ...

    def due_schedules(self, now: datetime) -> list[ScheduleRow]:
        """Unpaused schedules whose slot has come (and damaged rows, which only warn)."""
        ...

    def llm_totals(self, exec_id: str) -> LedgerTotals:
        """A run's ledger rows summed."""
        ...

    def run_events(self, exec_id: str) -> dict[str, object]:
        """Every event the run set (`ctx.set_event`): key to its last value."""
        ...

    def run_event(self, exec_id: str, key: str) -> tuple[bool, object]:
        """(whether the run set event `key`, its value)."""
        ...

    def stream_items(self, exec_id: str, key: str, offset: int) -> list[StreamItem]:
        """Stream `key`'s rows from position `offset` on, in order (a page of them)."""
        ...

    # -- held starts and circuit breakers (issue 26) ------------------------------

    def due_held_starts(self, now: datetime) -> list[tuple[str, str]]:
        """The (workflow name, key) of every held start due at `now`, earliest first."""
        ...

    def held_starts(self) -> list[HeldRow]:
        """Every held start (its debounce or batch window still open)."""
        ...

    def breaker(self, activity: str) -> BreakerRow | None:
        """One activity's circuit breaker as stored; None when it never failed."""
        ...

    def breakers(self) -> list[BreakerRow]:
        """Every stored circuit breaker."""
        ...
