"""PostgresWriteTxn: one write transaction's statements on Postgres (the WriteTxn protocol).

This file holds the run rows and their histories (the hot path of a
decision); the class composes the rest from base classes: row and key
locks (write_txn_locks.py, which says the lock order), signals and timers
(write_txn_signals.py), tasks (write_txn_tasks.py) and the side tables
both stores share (store/sql/side_tables.py).
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine import payloads
from harvest_engine.errors import HarvestInternalError
from harvest_engine.store.postgres import batch_locks, deferred
from harvest_engine.store.postgres.arrays import MaybeInts, Texts
from harvest_engine.store.postgres.notify import (
    DONE_CHANNEL,
    FINISH_COMMAND,
    NOTIFY_PROGRESS,
)
from harvest_engine.store.postgres.txn_memory import NOISY
from harvest_engine.store.postgres.write_txn_locks import RowLocks
from harvest_engine.store.postgres.write_txn_signals import SignalsAndTimers
from harvest_engine.store.postgres.write_txn_tasks import TaskTable
from harvest_engine.store.sql import columns
from harvest_engine.store.sql.dialect import POSTGRES
from harvest_engine.store.sql.progress import POSTGRES_PROGRESS, ProgressWrites
from harvest_engine.store.sql.reads import POSTGRES_READS
from harvest_engine.store.sql.run_rows import Assignments, new_run_values
from harvest_engine.store.sql.shaping import POSTGRES_SHAPING, ShapingTables
from harvest_engine.store.sql.side_tables import POSTGRES_SIDE, SideTables
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from datetime import datetime

    from harvest_engine.events import HistoryEvent
    from harvest_engine.store.postgres.held_sql import Stored
    from harvest_engine.store.rows import ExecutionRecord, NewExecution
    from harvest_engine.store.sql.flow import ReadBehind

_assignments = Assignments(POSTGRES)


def _notifying_end(sql: str, fields: dict[str, Any]) -> str:
    """`sql` (an UPDATE of one run's row), notifying DONE_CHANNEL when it moves the run's end.

    A reseal or an import sets `state` / `successor`: a client awaiting the
    run's end hears it at the commit.
    """
    if "state" not in fields and "successor" not in fields:
        return sql
    return (
        f"WITH moved AS ({sql} RETURNING exec_id) "
        f"SELECT pg_notify('{DONE_CHANNEL}', exec_id) FROM moved"
    )


_INSERT_RUN = (
    "WITH run AS (INSERT INTO harvest_executions (exec_id, workflow_name, "
    "workflow_id, state, attempt, input, memo, search_attributes, parent_exec_id, "
    "parent_close_policy, predecessor, started_at, deadline, retry_policy, "
    "not_before, next_seq, needs_decision, history_bytes) VALUES "
    "(%s, %s, %s, 'RUNNING', %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 2, 1, %s)) "
    "INSERT INTO harvest_events (exec_id, seq, type, at, attrs) "
    "VALUES (%s, 1, %s, %s, %s)"
)
"""A new run's row (next seq 2) and its WorkflowStarted event, as one statement."""


_ADMIT_RUNS = (
    "WITH moved AS (UPDATE harvest_executions e SET state = 'RUNNING', "
    "needs_decision = 1, deadline = a.deadline "
    "FROM unnest(%s::text[], %s::bigint[]) AS a(exec_id, deadline) "
    "WHERE e.exec_id = a.exec_id RETURNING e.exec_id) "
    f"SELECT pg_notify('{DONE_CHANNEL}', exec_id) FROM moved"
)
"""Admitted runs RUNNING with their deadlines; a state change notifies, as
`update_execution`'s (`_notifying_end`)."""


class PostgresWriteTxn(
    RowLocks, SignalsAndTimers, TaskTable, SideTables, ProgressWrites, ShapingTables
):
    """The WriteTxn of one Postgres transaction (READ COMMITTED plus row locks)."""

    _side = POSTGRES_SIDE
    _progress = POSTGRES_PROGRESS
    _shaping = POSTGRES_SHAPING

    # -- what progress rows (sql/progress.py) need of Postgres --------------------

    def _progress_conn(self) -> psycopg.Connection[tuple[Any, ...]]:
        return self._conn

    def _progress_written(self, exec_id: str) -> None:
        # Heard at commit by a client reading the run's events or streams
        # (Postgres folds repeats of one notice within a transaction).
        self._conn.execute(NOTIFY_PROGRESS, (exec_id,))

    # -- what the side tables (sql/side_tables.py) need of Postgres --------------

    def _side_conn(self) -> psycopg.Connection[tuple[Any, ...]]:
        return self._conn

    def _flow_worker(self) -> str:
        return self.worker_id  # a queue's worker_concurrency counts per worker

    def _flow_read_behind(self) -> ReadBehind:
        # The admitted runs' rows travel behind their lock: their first
        # decisions, in this transaction, lock and read nothing more.
        return functools.partial(batch_locks.read_behind, self._raw, self.memory)

    @contextmanager
    def _log_savepoint(self) -> Iterator[None]:
        try:
            with self._conn.transaction():  # a bad line never fails the decision
                yield
        except psycopg.DataError:
            pass  # e.g. a NUL character Postgres text cannot hold: the lines are dropped

    def _mutex_key_lock(self, key: str) -> None:
        self._key_lock("mutex", key)  # two workers are never both granted one

    def _wake_run(self, exec_id: str) -> None:
        row = self.execution(exec_id)  # NOWAIT in a decision: RunBusy stands it back
        if row is not None and row.state == "RUNNING":
            self.update_execution(exec_id, needs_decision=1)

    def _mutex_queued(self, exec_id: str) -> None:
        self.memory.quiet.pop(exec_id, None)

    def _purging(self) -> None:
        pass  # the purged runs are locked (SKIP LOCKED): no decision holds one

    def _command_holds(self, row_id: int, exec_ids: Sequence[str]) -> None:
        for exec_id in exec_ids:  # queued behind the claim: one round trip for both
            batch_locks.lock_for_command(self._conn, self.memory, row_id, exec_id)

    def finish_command(
        self, row_id: int, reply: str, exec_id: str | None, now: datetime
    ) -> None:
        """Mark a command applied and notify its waiting client (at the commit).

        The command's row is no run's: the runs' held writes (a signal it
        staged, say) need not go first, so the decision that follows may
        still take that signal in without it ever being sent
        (held_signals). Inside a joined write (none applies a command) the
        block's savepoint must precede it, so it goes the usual way.
        """
        conn = self._conn if self.memory.held.blocks else self._raw
        conn.execute(FINISH_COMMAND, (micros(now), reply, exec_id, row_id))

    # -- runs ---------------------------------------------------------------

    def execution(self, exec_id: str) -> ExecutionRecord | None:
        if exec_id in self.memory.rows:
            return self.memory.rows[exec_id]  # locked by this transaction
        kept = self._locked_row
        if kept is not None and kept.exec_id == exec_id:
            self._locked_row = None
            return kept  # read under this transaction's lock, unchanged since
        if self._waits_for(exec_id):
            return POSTGRES_READS.execution(self._conn, exec_id, lock=True)
        row = self._lock_row(
            f"SELECT {columns.EXECUTION_COLUMNS} FROM harvest_executions "
            "WHERE exec_id = %s FOR UPDATE",
            exec_id,
        )
        return None if row is None else columns.execution_from_row(row)

    def runs_of_key(
        self, workflow_name: str, workflow_id: str
    ) -> list[ExecutionRecord]:
        self._key_lock("start", workflow_name, workflow_id)
        return POSTGRES_READS.runs_of_key(self._conn, workflow_name, workflow_id)

    def insert_execution(self, new: NewExecution, started: HistoryEvent) -> None:
        """The run's row and its first event in one statement (`_INSERT_RUN`).

        Nothing to count before the commit: the row is new in this
        statement, so no other append can have moved its next seq, and a
        run already there fails the insert (and the transaction).
        """
        if started.seq != 1:
            raise HarvestInternalError(
                f"event seq {started.seq} does not start run {new.exec_id}"
            )
        if new.parent_exec_id is not None:
            self.memory.quiet.pop(new.parent_exec_id, None)  # a running child now
        event: Stored = (
            1,
            started.type,
            micros(started.at),
            payloads.dumps(started.attrs),
        )
        self._conn.execute(
            _INSERT_RUN,
            (*new_run_values(new, event[2]), len(event[3]), new.exec_id, *event[1:]),
        )
        self.memory.tail(new.exec_id, [event])
        self.memory.started += 1

    def update_execution(self, exec_id: str, **fields: Any) -> None:
        if not fields:
            return
        assignments, values = _assignments(fields)
        sql = f"UPDATE harvest_executions SET {assignments} WHERE exec_id = %s"
        self._conn.execute(_notifying_end(sql, fields), (*values, exec_id))
        self.memory.changed(exec_id, fields)
        if fields.get("state") == "RUNNING":
            self.memory.forget_children()  # a child back to RUNNING (not known whose)

    def admit_runs(self, admitted: Sequence[tuple[str, datetime | None]]) -> None:
        """One statement for the batch (`_ADMIT_RUNS`), not one per run."""
        if not admitted:
            return
        self._conn.execute(
            _ADMIT_RUNS,
            (
                Texts(exec_id for exec_id, _ in admitted),
                MaybeInts(None if d is None else micros(d) for _, d in admitted),
            ),
        )
        for exec_id, deadline in admitted:
            self.memory.changed(
                exec_id, {"state": "RUNNING", "needs_decision": 1, "deadline": deadline}
            )
        self.memory.forget_children()  # a child back to RUNNING (not known whose)

    def seal(
        self,
        exec_id: str,
        state: str,
        *,
        closed_at: datetime,
        output: str | None = None,
        error: str | None = None,
    ) -> None:
        self.memory.rows.pop(exec_id, None)
        locked = self.memory.held_tasks
        for task_id in [t for t, run in locked.items() if run == exec_id]:
            del locked[task_id]  # deleted with the run's end
        # One statement for the run's row, its tasks, timers, signals and
        # watchers (held_sql.SEAL), held to travel after the run's other held writes:
        # a decision that ends its run then sends nothing, so takes no savepoint.
        held = self.memory.held
        held.pending.append(
            deferred.Piece(
                exec_id,
                held.now(),
                seal={
                    "state": state,
                    "closed": micros(closed_at),
                    "output": output,
                    "error": error,
                    "id": exec_id,
                },
            )
        )
        if self.memory.quiet.get(exec_id, NOISY).mutexes:
            return  # no mutex entry when its row was locked, and none queued since
        keys = self._conn.execute(
            "SELECT key FROM harvest_mutexes WHERE exec_id = %s ORDER BY key",
            (exec_id,),
        ).fetchall()
        if keys:
            for (key,) in keys:
                self._key_lock("mutex", key)
            self._drop_mutex_places(exec_id)

    # -- events -------------------------------------------------------------

    def load_events(self, exec_id: str, after_seq: int = 0) -> list[HistoryEvent]:
        known = self.memory.events_after(exec_id, after_seq)
        if known is not None:
            return known  # this transaction appended every one of them
        held = self.memory.rows.get(exec_id)
        if held is not None and after_seq >= held.next_seq - 1:
            # The locked row (kept as this transaction's appends moved it)
            # says the history ends there: a cached instance's decision
            # reads nothing, so it asks nothing.
            return []
        return POSTGRES_READS.load_events(self._conn, exec_id, after_seq)

    def append_events(
        self, exec_id: str, events: Sequence[HistoryEvent], **fields: Any
    ) -> None:
        """Append in one statement that also sets `fields` of the run's row.

        The UPDATE of the run's row (locked until the transaction ends) moves
        next_seq only if it was the first event's seq, and feeds the INSERT
        of every event; the rows written are counted before the commit
        (`txn_memory`), so a run that is unknown or whose next seq is another
        fails the transaction with nothing written. An append that sets no
        field but `needs_decision` is held and travels in one statement with
        the run's next writes (`deferred`): a completion's with the decision's.
        """
        if not events:
            self.update_execution(exec_id, **fields)
            return
        deciding = self._deciding  # `_waits_for`, inlined: every append asks
        if (
            deciding is not None
            and deciding != exec_id
            and exec_id not in self.memory.rows
        ):
            # Another run's row, in a decision: taken NOWAIT (RunBusy if held).
            self._lock_row(
                "SELECT 1 FROM harvest_executions WHERE exec_id = %s FOR UPDATE",
                exec_id,
            )
        held_only = fields.keys() <= deferred.HELD_FIELDS
        if not held_only:
            _assignments(fields)  # refuses an unknown column
        first = events[0].seq
        stored: list[Stored] = []
        size = 0
        for offset, event in enumerate(events):
            if event.seq != first + offset:
                raise HarvestInternalError(
                    f"event seq {event.seq} does not continue run {exec_id} "
                    f"(next is {first + offset})"
                )
            attrs = payloads.dumps(event.attrs)
            size += len(attrs)
            stored.append((event.seq, event.type, micros(event.at), attrs))
        held = self.memory.held
        held.pending.append(
            deferred.Piece(exec_id, held.now(), events=stored, fields=fields, size=size)
        )
        self.memory.tail(exec_id, stored)
        self.memory.changed(exec_id, fields, first + len(events), size)
        if not held_only:
            # Sent now, with the run's held writes (counted before the commit).
            deferred.send(self._raw, self.memory)
        if "state" in fields or "successor" in fields:
            # A client awaiting the run's end hears it at the commit.
            self._conn.execute("SELECT pg_notify(%s, %s)", (DONE_CHANNEL, exec_id))

    # -- run lifecycle (issue 3) ------------------------------------------------

    def running_children(self, exec_id: str) -> list[ExecutionRecord]:
        if self.memory.quiet.get(exec_id, NOISY).children:
            return []  # none when its row was locked, and none started since
        return POSTGRES_READS.running_children(self._conn, exec_id)

    def peek_execution(self, exec_id: str) -> ExecutionRecord | None:
        return self.execution(exec_id)
