"""A batch's run rows locked together: one round trip instead of one per run.

A pass decides (or records the outcomes of) many runs in one transaction.
Taking each run's row when its turn comes costs a round trip per run, and
two workers that listed the same runs meet row by row. Before the batch
works through its runs, `lock_runs` takes them all (a decision batch a
few at a time, `group_commit`):
- a decision batch locks, skipping rows another worker holds, the runs that
  still need a decision (the listing's own condition, now): a run another
  worker decided since this worker listed it is not decided again (it would
  replay its history to find nothing new). A run not locked is skipped by
  its `lock_for_decision` (False), as a run held elsewhere always was;
- a record batch waits for its runs' rows in one order (exec_id bytewise,
  the order claims take them in), then for its tasks' rows (a run's row
  before its tasks', as everywhere).
The rows and the flags of `txn_memory` are read by a second statement,
after the locks are held: a statement that waited for a row, or met it
just updated, sees the row's new version but its subqueries see the older
snapshot (READ COMMITTED), so flags read with the lock could miss a signal
committed meanwhile. A decision batch also reads the whole history of its
short runs (a new run's first decision reads it all) into the
transaction's tails. The statements travel in one round trip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine.store.postgres.arrays import Ints, Texts
from harvest_engine.store.postgres.txn_memory import Quiet
from harvest_engine.store.sql import columns
from harvest_engine.store.sql.dialect import POSTGRES
from harvest_engine.store.sql.wakeups import PANIC_BACKOFF

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from harvest_engine.store.postgres.held_sql import Stored
    from harvest_engine.store.postgres.txn_memory import TxnMemory
    from harvest_engine.store.rows import ExecutionRecord

Conn = psycopg.Connection[tuple[Any, ...]]

FLAGS = (
    "NOT EXISTS (SELECT 1 FROM harvest_signals s "
    "WHERE s.exec_id = e.exec_id AND s.delivered = 0), "
    "NOT EXISTS (SELECT 1 FROM harvest_timers t WHERE t.exec_id = e.exec_id), "
    "NOT EXISTS (SELECT 1 FROM harvest_mutexes m WHERE m.exec_id = e.exec_id), "
    "NOT EXISTS (SELECT 1 FROM harvest_executions c WHERE c.parent_exec_id = e.exec_id "
    "AND c.state IN ('RUNNING', 'ENQUEUED'))"
)
"""A run's `Quiet` flags, after its row's columns."""

ROWS_AND_FLAGS = (
    f"SELECT {columns.EXECUTION_COLUMNS}, {FLAGS} FROM harvest_executions e "
    "WHERE exec_id = ANY(%s)"
)

# A client command's run, by `exec_id = %s`: Postgres keeps a prepared
# statement's generic plan for these, where one by `= ANY(array)` is planned
# again at every execution (its generic plan guesses many rows): ~0.2 ms.
ROW_AND_FLAGS = (
    f"SELECT {columns.EXECUTION_COLUMNS}, {FLAGS} FROM harvest_executions e "
    "WHERE exec_id = %s"
)
# Locked only while this transaction holds the command's row (its claim):
# a worker that lost the claim to another does not wait for that one's run.
_LOCK_FOR_COMMAND = (
    "SELECT 1 FROM harvest_executions WHERE exec_id = %s AND EXISTS ("
    "SELECT 1 FROM harvest_commands WHERE id = %s FOR UPDATE SKIP LOCKED) FOR UPDATE"
)

SHORT = 8
"""A run with at most this many events has its history read with its batch's lock."""

# The whole history of short runs (a run's first decision reads it all):
# read after the locks, so no one appends to a locked run meanwhile.
SHORT_HISTORIES = (
    "SELECT exec_id, seq, type, at, attrs FROM harvest_events WHERE exec_id IN "
    "(SELECT exec_id FROM harvest_executions WHERE exec_id = ANY(%s) AND next_seq <= %s) "
    "ORDER BY exec_id, seq"
)
# One run's (`exec_id = %s`: a generic plan Postgres keeps, where planning the
# ANY form and its four subplans anew at each execution took ~0.9 ms).
SHORT_HISTORY = (
    "SELECT exec_id, seq, type, at, attrs FROM harvest_events WHERE exec_id = %s "
    "AND EXISTS (SELECT 1 FROM harvest_executions WHERE exec_id = %s AND next_seq <= %s) "
    "ORDER BY seq"
)

# runs_needing_decision's condition at `now`, or ended (the decision evicts it).
_STILL_NEEDS = (
    "state <> 'RUNNING' OR (pause_reason IS NULL AND (needs_decision = 1 OR (deadline IS NOT NULL AND "
    "deadline <= %(now)s) OR EXISTS (SELECT 1 FROM harvest_timers t WHERE "
    "t.exec_id = e.exec_id AND t.fire_at <= %(now)s)) AND NOT ("
    + POSTGRES.render(PANIC_BACKOFF.replace("?", ":now"))
    + " AND (deadline IS NULL OR deadline > %(now)s)))"
)


_DECIDE_ONE, _DECIDE_MANY = (
    f"SELECT exec_id FROM harvest_executions e WHERE {which} "
    f"AND ({_STILL_NEEDS}) FOR UPDATE SKIP LOCKED"
    # One run by `exec_id = ...` (its generic plan kept: see SHORT_HISTORY).
    for which in ("exec_id = %(id)s", "exec_id = ANY(%(ids)s)")
)
_LOCK_RUNS = (
    "SELECT 1 FROM harvest_executions WHERE exec_id = ANY(%s) "
    'ORDER BY exec_id COLLATE "C" FOR UPDATE'
)
_LOCK_TASKS = (
    "SELECT id, exec_id FROM harvest_tasks WHERE id = ANY(%s) ORDER BY id FOR UPDATE"
)


_FLAGS = len(Quiet._fields)


def split(row: tuple[Any, ...]) -> tuple[ExecutionRecord, Quiet]:
    """A run's record and flags from a row of its columns and FLAGS."""
    return columns.execution_from_row(row[:-_FLAGS]), Quiet(*map(bool, row[-_FLAGS:]))


def hold(memory: TxnMemory, row: tuple[Any, ...]) -> None:
    """Keep a locked run's row and flags (a row of ROWS_AND_FLAGS)."""
    record, quiet = split(row)
    memory.rows[record.exec_id] = record
    memory.quiet[record.exec_id] = quiet


def lock_runs(
    conn: Conn,
    memory: TxnMemory,
    exec_ids: Sequence[str],
    *,
    deciding_at: int | None,
    task_ids: Sequence[int],
) -> set[str]:
    """Lock a batch's runs (and tasks), keep their rows in `memory`; the runs not taken."""
    ids = Texts(e for e in dict.fromkeys(exec_ids) if e not in memory.rows)
    if not ids:
        return memory.skipped & set(exec_ids)
    if deciding_at is not None:
        locked = memory.cursors.execute(
            conn,
            ("decide", len(ids) == 1),
            _DECIDE_ONE if len(ids) == 1 else _DECIDE_MANY,
            {"ids": ids, "id": ids[0], "now": deciding_at},
        )
        keep = read_behind(conn, memory, ids)
        taken = {r[0] for r in locked.fetchall()}
        keep(taken)
        memory.skipped.difference_update(taken)
        memory.skipped.update(e for e in ids if e not in taken)
        return memory.skipped & set(exec_ids)
    cursors = memory.cursors
    cursors.execute(conn, "lock", _LOCK_RUNS, (ids,))
    tasks = None
    if task_ids:
        tasks = cursors.execute(conn, "lock tasks", _LOCK_TASKS, (Ints(task_ids),))
    rows = cursors.execute(conn, "lock rows", ROWS_AND_FLAGS, (ids,))
    found = rows.fetchall()
    for exec_id in ids:
        memory.rows[exec_id] = None  # no such run, unless read below
    for row in found:
        hold(memory, row)
    if tasks is not None:
        memory.held_tasks.update((int(r[0]), r[1]) for r in tasks.fetchall())
    return set()


def read_behind(
    conn: Conn, memory: TxnMemory, exec_ids: Sequence[str]
) -> Callable[[set[str]], None]:
    """Send the rows, flags and short histories of runs whose lock was just sent.

    They travel behind the lock (its round trip), so they are read once it
    is granted; the returned call keeps those of the runs the lock took
    (`taken`, from the lock's answer) in `memory`, as `lock_runs` does: a
    decision of one of them then reads nothing.
    """
    ids = Texts(e for e in dict.fromkeys(exec_ids) if e not in memory.rows)
    if not ids:
        return lambda _taken: None
    if len(ids) == 1:
        (one,) = ids
        rows = conn.execute(ROW_AND_FLAGS, (one,))
        events = conn.execute(SHORT_HISTORY, (one, one, SHORT))
    else:
        rows = conn.execute(ROWS_AND_FLAGS, (ids,))
        events = conn.execute(SHORT_HISTORIES, (ids, SHORT))

    def keep(taken: set[str]) -> None:
        for row in rows.fetchall():
            if row[1] in taken:
                hold(memory, row)
        histories: dict[str, list[Stored]] = {}
        for exec_id, seq, type_, at, attrs in events.fetchall():
            histories.setdefault(exec_id, []).append((seq, type_, at, attrs))
        for exec_id, stored in histories.items():
            if exec_id in taken and exec_id not in memory.tails:
                memory.tails[exec_id] = stored

    return keep


def lock_for_command(conn: Conn, memory: TxnMemory, row_id: int, exec_id: str) -> None:
    """Lock and keep the run a client command changes, sent behind the command's claim.

    One round trip with the claim (`claim_command`'s hold), and only if the
    claim took the command: its row and flags are read after the lock, as
    `lock_runs` reads them. An unknown run is kept as None (not found).
    """
    if exec_id in memory.rows:
        return
    locked = conn.execute(_LOCK_FOR_COMMAND, (exec_id, row_id))
    rows = conn.execute(ROW_AND_FLAGS, (exec_id,))
    found = rows.fetchall()
    if locked.fetchall():
        for row in found:
            hold(memory, row)
    elif not found:
        memory.rows[exec_id] = None  # no such run
