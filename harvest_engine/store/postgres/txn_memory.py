"""What a Postgres write transaction knows without asking the server again.

Each read costs a round trip (writes travel pipelined, `pipelined.py`), and a
decision reads what its own transaction just wrote or could not have changed:
- the events it appended: a run's row stays locked from its first append to
  the commit, so no one else appends; the tail of a run's history from the
  first event this transaction appended is all here;
- whether the run has staged signals, timers, mutex entries or running
  children at all, read with (or, for a batch, just after) the decision's
  row lock: another worker's signal must update the locked row, so it
  cannot commit before this transaction ends, and only the run's own
  decision queues it on a mutex or starts a child (a running child's own
  continue-as-new or retry keeps it from being childless); this
  transaction's own new signals, timers, mutex entries and children clear
  the flags;
- the rows of the runs a batch locked together (`batch_locks`), as this
  transaction's own writes changed them, and which runs of the batch it
  skips; a held row's next_seq says where its history ends, so a decision
  of a cached instance reads no events; the tasks it locked with them,
  whose DELETE then needs no answer (its row count is checked with the
  appends');
- appends are counted together before the commit (`verify`);
- task ids come from a block reserved from the sequence, so inserting a
  claimed task needs no answer;
- the writes held back to travel with the run's next ones (`deferred`).
A savepoint that rolls back forgets the tails and the flags (its writes are
undone); a transaction that fails is thrown away with all of it.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

import psycopg

from harvest_engine import payloads
from harvest_engine.errors import HarvestInternalError
from harvest_engine.events import HistoryEvent
from harvest_engine.store.postgres import appends_check, deferred, pipelined
from harvest_engine.store.postgres.appends_check import Append
from harvest_engine.store.postgres.cursors import Cursors
from harvest_engine.store.postgres.deferred import Block, Held
from harvest_engine.store.postgres.held_sql import Stored
from harvest_engine.store.records import StagedSignal
from harvest_engine.store.rows import AttemptKey, ExecutionRecord
from harvest_engine.timestamps import from_micros, micros

_TIMES = frozenset({"started_at", "closed_at", "deadline", "not_before"})
_ROW_FIELDS = frozenset(f.name for f in fields(ExecutionRecord))
# Columns of the row a held ExecutionRecord does not carry.
_UNRECORDED = frozenset({"needs_decision", "reset_from", "reset_to", "forked_from"})


Mark = tuple[Block, tuple[int, int, int]]
"""A joined write's block, and how many appends, counted statements and
announced cancels the transaction had before it."""


class Quiet(NamedTuple):
    """What a run had none of when its row was locked (each flag: none)."""

    signals: bool  # staged, undelivered
    timers: bool
    mutexes: bool  # mutex queue entries
    children: bool  # RUNNING child runs


NOISY = Quiet(signals=False, timers=False, mutexes=False, children=False)
"""Known nothing: read the tables."""


# Task ids reserved at once (a sequence value is never handed out twice; an
# unused one is a gap, as a rolled-back insert leaves).
TASK_ID_BLOCK = 64


@dataclass
class TxnMemory:
    """Shared by a transaction and its savepoints."""

    appends: list[Append] = field(default_factory=list)
    tails: dict[str, list[Stored]] = field(default_factory=dict)
    # exec_id -> what it had none of, as of its lock
    quiet: dict[str, Quiet] = field(default_factory=dict)
    # Rows of runs locked by the transaction itself (not a savepoint), as
    # its writes left them; None: no such run.
    rows: dict[str, ExecutionRecord | None] = field(default_factory=dict)
    # exec_id -> its undelivered signals (each with its payload's length),
    # when this transaction staged them all (none were staged when its row
    # was locked: `Quiet.signals`).
    signals: dict[str, list[tuple[StagedSignal, int]]] = field(default_factory=dict)
    # Runs of a decision batch that another worker holds or that need no decision.
    skipped: set[str] = field(default_factory=set)
    # Task id -> run, of tasks locked (present) by the transaction itself.
    held_tasks: dict[int, str] = field(default_factory=dict)
    # Statements whose row count is known ahead: checked before the commit.
    counted: list[tuple[psycopg.Cursor[tuple[Any, ...]], int, str]] = field(
        default_factory=list
    )
    # Task ids reserved from the table's sequence, shared by the store's
    # transactions: a task inserted with one needs no RETURNING round trip.
    task_ids: collections.deque[int] = field(default_factory=collections.deque)
    # Writes held back to travel with the run's next ones (`deferred`).
    held: Held = field(default_factory=Held)
    # Attempt cancels announced, told to this process's listeners at the commit.
    announced: list[tuple[list[AttemptKey], str]] = field(default_factory=list)
    # Runs inserted (the store's YoungTables counts them at the commit).
    started: int = 0
    # The store's kept cursors (`cursors`), for the statements whose result
    # is read before their site runs again.
    cursors: Cursors = field(default_factory=Cursors)

    def next_task_id(self, conn: psycopg.Connection[tuple[Any, ...]]) -> int:
        """A fresh task id (a block of TASK_ID_BLOCK is reserved when none is left)."""
        if not self.task_ids:
            rows = conn.execute(
                "SELECT nextval(pg_get_serial_sequence('harvest_tasks', 'id')) "
                "FROM generate_series(1, %s)",
                (TASK_ID_BLOCK,),
            ).fetchall()
            self.task_ids.extend(sorted(int(r[0]) for r in rows))
        return self.task_ids.popleft()

    def tail(self, exec_id: str, rows: list[Stored]) -> None:
        """Keep an append's events as the run's tail (this transaction wrote them)."""
        tail = self.tails.get(exec_id)
        if tail is not None and tail[-1][0] + 1 == rows[0][0]:
            tail.extend(rows)
        else:
            self.tails[exec_id] = list(rows)

    def count_append(
        self, exec_id: str, first: int, count: int, tasks: tuple[int, ...]
    ) -> None:
        """Count a held append (with the held tasks it deletes) before the commit."""
        self.appends.append(Append(exec_id, first, count, tasks))

    def events_after(self, exec_id: str, after_seq: int) -> list[HistoryEvent] | None:
        """The run's events after `after_seq` when this transaction wrote all of them; else None."""
        tail = self.tails.get(exec_id)
        if not tail or tail[0][0] > after_seq + 1:
            return None
        return [
            HistoryEvent(
                seq=seq, type=type_, at=from_micros(at), attrs=payloads.loads(attrs)
            )
            for seq, type_, at, attrs in tail
            if seq > after_seq
        ]

    def changed(
        self, exec_id: str, fields: dict[str, Any], end: int = 0, size: int = 0
    ) -> None:
        """Follow a write of a held run's row: `fields` set, next_seq to `end` (if any)."""
        row = self.rows.get(exec_id)
        if row is None:
            return
        values: dict[str, Any] = {}
        for k, v in fields.items():  # a loop: no comprehension call an append
            if k in _TIMES:
                values[k] = None if v is None else from_micros(micros(v))
            elif k not in _UNRECORDED:
                values[k] = v
        if end:
            values["next_seq"] = end
            values["history_bytes"] = row.history_bytes + size
        if not _ROW_FIELDS.issuperset(values):
            unknown = sorted(values.keys() - _ROW_FIELDS)
            raise TypeError(f"ExecutionRecord has no field {unknown}")
        # `dataclasses.replace(row, **values)` without running __init__ again.
        moved = object.__new__(ExecutionRecord)
        moved.__dict__.update(row.__dict__, **values)
        self.rows[exec_id] = moved

    def staged(self, exec_id: str) -> None:
        """A signal was staged on the run: it has staged signals now, nothing else changed."""
        quiet = self.quiet.get(exec_id)
        if quiet is not None:
            self.quiet[exec_id] = quiet._replace(signals=False)

    def forget_children(self) -> None:
        """A run came back to RUNNING: no locked run is known childless any more."""
        for exec_id, quiet in self.quiet.items():
            self.quiet[exec_id] = quiet._replace(children=False)

    def forget(self) -> None:
        """A savepoint rolled back: what it wrote is gone, so forget tails, flags and rows.

        The rows stay locked (the transaction took them); they are read again.
        """
        self.tails.clear()
        self.quiet.clear()
        self.rows.clear()
        self.signals.clear()

    def open_block(self, name: str) -> Mark:
        """A joined write begins: its SAVEPOINT `name` waits for its first statement (`deferred`)."""
        checks = (len(self.appends), len(self.counted), len(self.announced))
        return self.held.open_block(name), checks

    def close_block(
        self, conn: psycopg.Connection[tuple[Any, ...]], mark: Mark, *, failed: bool
    ) -> None:
        """A joined write ended; if it failed, what it sent is rolled back.

        Its held writes are dropped then, and nothing it wrote is checked
        at the commit.
        """
        block, checks = mark
        self.held.close_block(block, failed=failed)
        if not failed:
            return
        try:
            if block.sent:
                pipelined.roll_back_to(conn, block.name)
        finally:
            appends, counted, announced = checks
            del self.appends[appends:], self.counted[counted:]
            del self.announced[announced:]
            self.forget()

    def flush(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        """Send the held writes (and the open blocks' savepoints) now."""
        deferred.send(conn, self)

    def why(
        self, exc: BaseException, conn: psycopg.Connection[tuple[Any, ...]]
    ) -> HarvestInternalError | None:
        """Which append failed, when `exc` is the commit's appends check failing."""
        return appends_check.diagnosis(exc, conn, self.appends)

    def verify(
        self, conn: psycopg.Connection[tuple[Any, ...]], wake: str | None = None
    ) -> bool:
        """Fail the transaction (before or at its commit) if an append wrote fewer events than given.

        With `wake` (a worker id), the commit's wake notice goes with the
        appends' check when there is one; whether it went.

        The appends are checked by the server (`appends_check`), in the
        commit's round trip; statements counted ahead (held task deletes
        without an append) are awaited here, after the appends' check (a
        failing check fails the sync; `why` says which append failed).
        """
        if self.held.waiting:
            deferred.send(conn, self)
        if self.appends:
            appends_check.send(conn, self.appends, wake, self.cursors)
        if self.counted:
            pipelined.sync(conn)
            for cursor, count, what in self.counted:
                if cursor.rowcount != count:
                    raise HarvestInternalError(f"{what} changed {cursor.rowcount} rows")
        return bool(self.appends) and wake is not None
