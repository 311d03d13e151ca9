"""The run rows one write transaction has read, kept current by its own writes.

Inside one `BEGIN IMMEDIATE` transaction this connection is the only writer
of the file (the single-writer contract), so a run's row read once stays
what the transaction's own statements make it. The write transaction keeps
each row it read, and updates the copy as its own statements change the
row, instead of reading it again at every step (the completion and the
decision of one run read it several times per commit).

With the row, one read also learns what else the run holds: whether it has
signal rows, its earliest timer, mutex places, how many tasks and whether
RUNNING children. Except for the task count, which every task insert and
delete keeps exact, these are upper bounds ("may have"): the transaction's
writes that add such a row raise them, and removals leave them as they are,
so a `False` (or no timer) is always true, and the probes they answer
(staged signals, due timers, a seal's cleanup deletes) can be skipped
without changing a result.

The store drops every entry when a transaction or a savepoint rolls back.
A committed transaction's rows are kept for the next one (a long run's
completion and decision commit once per activity and would read the row
again each time), but only while they are provably current: the next
transaction keeps them if no other connection committed meanwhile
(`PRAGMA data_version`, read under the write lock) and this connection
changed no row outside a transaction (`total_changes`); otherwise it starts
empty. Every write of a transaction goes through its SqliteWriteTxn, which
keeps the rows as the transactions before it left them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from harvest_engine.store.rows import ExecutionRecord, NewExecution
from harvest_engine.store.sql import columns
from harvest_engine.store.sqlite import verify
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Mapping

# Columns of the row that are times (stored as microseconds).
TIME_FIELDS = frozenset({"started_at", "closed_at", "deadline", "not_before"})
# Columns the row has but ExecutionRecord does not carry.
UNRECORDED_FIELDS = frozenset(
    {"needs_decision", "reset_from", "reset_to", "forked_from"}
)


@dataclass
class CachedRun:
    """A run's row as this transaction last wrote or read it, and what it may hold."""

    record: ExecutionRecord
    signals: bool
    """It may have signal rows that a staged read or a seal touches (undelivered
    ones; an unkeyed row is deleted when delivered). The row read answers
    "any signal row", an upper bound."""
    next_timer: int | None
    """No timer of it fires before this (microseconds); None: it has no timer."""
    mutexes: bool
    tasks: int
    """How many task rows it has (every task insert and delete goes through the transaction)."""
    children: bool
    """It may have RUNNING child runs."""
    appended: list[tuple[int, str, int, str]] = field(default_factory=list)
    """The events this transaction appended, as stored: (seq, type, at, attrs)."""
    staged: dict[int, bool] | None = None
    """Every undelivered signal of the run, id -> keyed, when this transaction's
    staged read saw them all and nothing was staged since; None: not known."""

    def no_timer_due(self, now: datetime) -> bool:
        """Whether no timer of the run can be due at `now` (a due-timer read finds none)."""
        return self.next_timer is None or self.next_timer > micros(now)


def with_fields(
    record: ExecutionRecord, fields: Mapping[str, object]
) -> ExecutionRecord:
    """A copy of `record` with columns set as a re-read of the row would return them.

    Times go through the stored microseconds, so the copy equals a fresh
    read field for field. The copy skips the dataclass's `__init__` (its
    24 fields cost more than the dictionary copy), which a frozen record
    allows since nothing else holds the new object yet.
    """
    copy = object.__new__(ExecutionRecord)
    values = copy.__dict__
    values.update(record.__dict__)
    for key, value in fields.items():
        if key in UNRECORDED_FIELDS:
            continue
        if key in TIME_FIELDS and isinstance(value, datetime):
            value = from_micros(micros(value))
        values[key] = value
    return copy


def started_run(new: NewExecution, started: tuple[int, str, int, str]) -> CachedRun:
    """A run its transaction just inserted, with its WorkflowStarted event as stored.

    The record holds what a read of the inserted row returns. Signals may
    already wait for a successor (a continue-as-new hands them over before
    its row exists); nothing else can, so a run with no predecessor holds
    none (the mark lasts past the commit, so it must not be a blind "may").
    """
    at = from_micros(started[2])
    record = ExecutionRecord(
        exec_id=new.exec_id,
        workflow_name=new.workflow_name,
        workflow_id=new.workflow_id,
        state="RUNNING",
        attempt=new.attempt,
        input=new.input,
        output=None,
        error=None,
        parent_exec_id=new.parent_exec_id,
        parent_close_policy=new.parent_close_policy,
        predecessor=new.predecessor,
        successor=None,
        started_at=at,
        closed_at=None,
        deadline=_stored_time(new.deadline),
        retry_policy=new.retry_policy,
        cancel_reason=None,
        cancel_seq=None,
        not_before=_stored_time(new.not_before),
        next_seq=2,
        history_bytes=len(started[3]),
        panic_count=0,
        memo=new.memo,
        search_attributes=new.search_attributes,
    )
    return CachedRun(
        record,
        signals=new.predecessor is not None,
        next_timer=None,
        mutexes=False,
        tasks=0,
        children=False,
        appended=[started],
    )


def _stored_time(value: datetime | None) -> datetime | None:
    return None if value is None else from_micros(micros(value))


# The run's row and, in the same read, what else it holds (run_cache.CachedRun).
EXECUTION_AND_HOLDINGS = (
    f"SELECT {columns.EXECUTION_COLUMNS}, "
    "EXISTS (SELECT 1 FROM harvest_signals s WHERE s.exec_id = e.exec_id), "
    "(SELECT MIN(t.fire_at) FROM harvest_timers t WHERE t.exec_id = e.exec_id), "
    "EXISTS (SELECT 1 FROM harvest_mutexes m WHERE m.exec_id = e.exec_id), "
    "(SELECT COUNT(*) FROM harvest_tasks k WHERE k.exec_id = e.exec_id), "
    "EXISTS (SELECT 1 FROM harvest_executions c WHERE c.parent_exec_id = e.exec_id "
    "AND c.state IN ('RUNNING', 'ENQUEUED')) "
    "FROM harvest_executions e WHERE e.exec_id = ?"
)


def read_run(conn: sqlite3.Connection, exec_id: str) -> CachedRun | None:
    """Read a run's row and its holdings in one statement; None when no run has the id."""
    row = conn.execute(EXECUTION_AND_HOLDINGS, (exec_id,)).fetchone()
    if row is None:
        return None
    try:
        record = columns.execution_from_row(row)
    except (ValueError, TypeError, OverflowError) as exc:
        raise verify.corrupt(conn, exec_id, f"its row does not read ({exc})") from exc
    signals, next_timer, mutexes, tasks, children = row[-5:]
    if next_timer is not None and not isinstance(next_timer, int):
        next_timer = 0  # a damaged fire time: always look (due_timers reads it)
    return CachedRun(
        record,
        signals=bool(signals),
        next_timer=next_timer,
        mutexes=bool(mutexes),
        tasks=int(tasks),
        children=bool(children),
    )


# How many runs a commit hands to the next transaction; past it they are read again.
KEPT_RUNS = 1024
# How many appended events a run keeps for reading back (a longer tail is read).
KEPT_EVENTS = 64


class RunCache(dict[str, CachedRun]):
    """The runs of the open transaction and of the last commit, by exec id.

    A dict, so the lookup every store method makes (`get`) costs no Python
    call; `clear()` forgets every run when part of a transaction rolls back.
    """

    def __init__(self) -> None:
        super().__init__()
        # What the kept rows were current as of: the file's data version as
        # the connection saw it (None: not read yet) and its row changes.
        self._version: int | None = None
        self._changes = -1
        # Whether the file may hold signal header rows (None: not read yet).
        # This connection is the file's only writer while it is open, so once
        # known it stays true of the file; a rolled-back write leaves it true.
        self.signal_headers: bool | None = None
        # Whether the file may hold run watchers' links (None: not read yet),
        # known as `signal_headers` is.
        self.watchers: bool | None = None

    def begin(self, conn: sqlite3.Connection) -> None:
        """A transaction begins: keep the last commit's rows only if nothing else wrote since."""
        kept, self._version = self._version, None
        if not self:
            return
        # The version of this transaction's snapshot: the rows it reads from
        # here on belong to it whether the kept ones stay or not.
        self._version = conn.execute("PRAGMA data_version").fetchone()[0]
        if (
            self._version != kept
            or conn.total_changes != self._changes
            or len(self) > KEPT_RUNS
        ):
            self.clear()

    def before_commit(self, conn: sqlite3.Connection) -> None:
        """The transaction's last statement comes: learn the version its rows belong to."""
        if self and self._version is None:
            self._version = conn.execute("PRAGMA data_version").fetchone()[0]

    def committed(self, conn: sqlite3.Connection) -> None:
        """The transaction committed: its rows stay, as of this connection's changes."""
        self._changes = conn.total_changes

    def put(self, run: CachedRun) -> None:
        """Keep a run's row just read."""
        self[run.record.exec_id] = run

    def changed(self, exec_id: str, fields: Mapping[str, object]) -> None:
        """The transaction set these columns of the run's row."""
        run = self.get(exec_id)
        if run is not None:
            run.record = with_fields(run.record, fields)
