"""A run's writes held back until the transaction's next statement, then sent as one.

Recording an activity's outcome writes three rows (its task deleted, its
attempt logged, its completion appended) and the run's follow-up decision,
in the same transaction, appends the next events: each was a statement of
its own (~130 us of the worker's Python and a server call apiece). A write
whose answer nobody needs now is kept here instead and sent with the run's
next ones, as one statement, just before the transaction's next statement
of any kind (`TxnState._conn`) or before the commit: the server sees the
same writes in the same order relative to every other statement (a run's
writes in their order, any run's end after every write held before it),
only fewer statements.

What is held: the DELETE of a task the transaction locked (`held_tasks`), an
attempt's log row, a claimed task's new row (its id reserved ahead), an
append whose fields are `needs_decision` and `panic_count` at most (no
client or flow read in the transaction looks at them), and a run's end
(`SEAL`), which goes after the run's other held writes. (The flow tables,
store/sql/flow.py, keep the connection `txn.flow()` gave them, which sent
what was held then; what their later reads count is never held.) The
guards stay: the run's row moves only if its next seq is the first
event's and every held task was still there (the statement's events are
counted before the commit: a task gone or a seq moved fails the
transaction, as the separate statements' counts did).

Savepoints: a joined write's (a decision's) SAVEPOINT is held too, and sent
only before the block's first statement, after the pieces written before
the block: a decision whose writes are all held sends none, and if it fails
its pieces are dropped with nothing to undo on the server.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from harvest_engine.store.postgres.held_signals import HeldSignal
from harvest_engine.store.postgres.notify import DONE_CHANNEL
from harvest_engine.store.sql.dialect import POSTGRES
from harvest_engine.store.sql.run_rows import Assignments

if TYPE_CHECKING:
    from collections.abc import Callable

    import psycopg


# An appended event as stored: seq, type, at (micros), attrs (JSON text).
Stored = tuple[int, str, int, str]

HELD_FIELDS = frozenset({"needs_decision", "panic_count"})
"""An append that sets no other field of the run's row may wait for the next statement."""

_ATTEMPT_COLUMNS = (
    "exec_id, activity_id, activity_name, attempt, started_at, ended_at, outcome, error"
)
_TASK_COLUMNS = (
    "id, exec_id, activity_id, activity_name, input, queue, max_attempts, ready_at, "
    "scheduled_at, retry_policy, start_to_close, schedule_to_close_at, idempotency_key, "
    "local, heartbeat_timeout, status, claimed_at, worker_id, lease_expires_at"
)


def _task_marks(mark: Callable[[int], str]) -> str:
    """A claimed task's VALUES row: 15 columns, RUNNING, claimed at, by, its lease's end."""
    plain = ", ".join(mark(j) for j in range(15))
    return (
        f"({plain}, 'RUNNING', {mark(15)}, {mark(16)}, clock_timestamp() + "
        f"COALESCE(make_interval(secs => {mark(17)}), {mark(18)}::interval))"
    )


CLAIMED_TASK = (
    f"INSERT INTO harvest_tasks ({_TASK_COLUMNS}) VALUES {_task_marks(lambda _j: '%s')}"
)
"""A claimed task's row, alone (19 values: `Piece.claimed`)."""
ATTEMPT = (
    f"INSERT INTO harvest_activity_attempts ({_ATTEMPT_COLUMNS}) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)
"""An attempt's row, alone (8 values: `Piece.attempt`)."""
SEAL = (
    "WITH sealed AS (UPDATE harvest_executions SET state = %(state)s, "
    "closed_at = %(closed)s, output = %(output)s, error = %(error)s, "
    "needs_decision = 0 WHERE exec_id = %(id)s RETURNING exec_id), "
    "tasks AS (DELETE FROM harvest_tasks WHERE exec_id = %(id)s), "
    "timers AS (DELETE FROM harvest_timers WHERE exec_id = %(id)s), "
    "dropped AS (DELETE FROM harvest_signals WHERE exec_id = %(id)s "
    "AND idempotency_key IS NULL), "
    "kept AS (UPDATE harvest_signals SET delivered = 1 WHERE exec_id = %(id)s "
    "AND delivered = 0 AND idempotency_key IS NOT NULL), "
    "watchers AS (DELETE FROM harvest_run_watchers WHERE exec_id = %(id)s "
    "RETURNING watcher), "
    "woken AS (UPDATE harvest_executions SET needs_decision = 1 "
    "WHERE exec_id IN (SELECT watcher FROM watchers) AND state = 'RUNNING') "
    f"SELECT pg_notify('{DONE_CHANNEL}', exec_id) FROM sealed"
)
"""A run's end: its row, its tasks, timers and signals (the keyed signals stay,
delivered, for their idempotency) and the runs watching it (flagged, their
links gone); its notice tells a client waiting on the run's result (at
commit). Arguments: `Piece.seal`."""
_assignments = Assignments(POSTGRES)


@dataclass
class Piece:
    """One write of a run not sent yet: a task's delete, an attempt's row, or an append."""

    exec_id: str
    born: int  # memory.clock when written (savepoints compare it)
    task: int | None = None
    attempt: tuple[Any, ...] | None = None
    claimed: tuple[Any, ...] | None = None  # a new claimed task's values (CLAIMED_TASK)
    seal: dict[str, Any] | None = None  # the run's end (SEAL's arguments): sent last
    signal: HeldSignal | None = None  # a staged signal (held_signals): sent alone
    events: list[Stored] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)
    size: int = 0


@dataclass
class Block:
    """A joined write's savepoint: sent only once the block sends a statement."""

    name: str
    opened: int  # memory clock when the block began
    sent: bool = False


@dataclass
class Held:
    """The transaction's pieces not sent yet, and the savepoints of its open blocks."""

    pending: list[Piece] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)  # outermost first
    clock: itertools.count[int] = field(default_factory=itertools.count)
    # Held signals by provisional id, and the pieces of those a decision took in.
    signals: dict[int, HeldSignal] = field(default_factory=dict)
    taken: list[Piece] = field(default_factory=list)

    def now(self) -> int:
        """A new tick: pieces and blocks are ordered by it."""
        return next(self.clock)

    @property
    def waiting(self) -> bool:
        """Whether a statement must first send held pieces or a savepoint."""
        return bool(self.pending) or (bool(self.blocks) and not self.blocks[-1].sent)

    def open_block(self, name: str) -> Block:
        """A joined write begins: its savepoint waits for its first statement."""
        block = Block(name, self.now())
        self.blocks.append(block)
        return block

    def close_block(self, block: Block, *, failed: bool) -> None:
        """A joined write ended; if it failed, its pieces not sent are dropped.

        A held signal it took in is given back (staged again), unless the
        block staged it too.
        """
        self.blocks.remove(block)
        if failed:
            self.pending = [p for p in self.pending if p.born < block.opened]
            back = [p for p in self.taken if _consumed_at(p) > block.opened]
            self.taken = [p for p in self.taken if p not in back]
            for piece in back:
                if piece.born < block.opened and piece.signal is not None:
                    piece.signal.consumed = None
                    self.pending.append(piece)
            self.pending.sort(key=lambda p: p.born)

    def hold_signal(self, exec_id: str, values: tuple[Any, ...]) -> int:
        """Hold a staged signal (STAGE's `values`); its provisional id (negative)."""
        born = self.now()
        signal = HeldSignal(-1 - born, values)
        self.signals[signal.provisional] = signal
        self.pending.append(Piece(exec_id, born, signal=signal))
        return signal.provisional

    def set_aside_taken(self) -> None:
        """Move the held signals a decision took in out of the pieces to send."""
        taken = [p for p in self.pending if _consumed_at(p) >= 0]
        if taken:
            self.taken.extend(taken)
            self.pending = [p for p in self.pending if _consumed_at(p) < 0]


def _consumed_at(piece: Piece) -> int:
    """When a decision took the piece's held signal in; -1: not taken (or not a signal)."""
    signal = piece.signal
    return -1 if signal is None or signal.consumed is None else signal.consumed


class Memory(Protocol):
    """What sending needs of the transaction's memory (txn_memory.TxnMemory)."""

    held: Held
    counted: list[tuple[psycopg.Cursor[tuple[Any, ...]], int, str]]

    def count_append(
        self,
        cursor: psycopg.Cursor[tuple[Any, ...]],
        exec_id: str,
        first: int,
        count: int,
        tasks: tuple[int, ...],
    ) -> None:
        """Count an append's statement before the commit."""
        ...


def send(conn: psycopg.Connection[tuple[Any, ...]], memory: Memory) -> None:
    """Send the held pieces, one statement per run, and the open blocks' savepoints.

    A piece written before a block's savepoint travels before it: a block's
    rollback undoes only what the block wrote.
    """
    held = memory.held
    for block in held.blocks:
        if not block.sent:
            before = [p for p in held.pending if p.born < block.opened]
            held.pending = [p for p in held.pending if p.born > block.opened]
            _send(conn, memory, before)
            conn.execute(f"SAVEPOINT {block.name}", prepare=False)
            block.sent = True
    pieces, held.pending = held.pending, []
    _send(conn, memory, pieces)


def _send(
    conn: psycopg.Connection[tuple[Any, ...]], memory: Memory, pieces: list[Piece]
) -> None:
    """The pieces in order, one statement per run between runs' ends.

    A run's end also flags the runs watching it, so it is a barrier: every
    piece held before it (of any run) goes first, every later one after.
    """
    by_run: dict[str, list[Piece]] = {}
    for piece in pieces:
        if piece.signal is not None:
            # After the run's earlier writes (its flag then outlives theirs).
            _send_run(conn, memory, piece.exec_id, by_run.pop(piece.exec_id, []))
            piece.signal.send(conn)
            continue
        if piece.seal is None:
            by_run.setdefault(piece.exec_id, []).append(piece)
            continue
        for exec_id, run_pieces in by_run.items():
            _send_run(conn, memory, exec_id, run_pieces)
        by_run = {}
        conn.execute(SEAL, piece.seal)
    for exec_id, run_pieces in by_run.items():
        _send_run(conn, memory, exec_id, run_pieces)


def _send_run(
    conn: psycopg.Connection[tuple[Any, ...]],
    memory: Memory,
    exec_id: str,
    run_pieces: list[Piece],
) -> None:
    """One run's held writes (no end among them): one statement if they append events."""
    if not run_pieces:
        return
    tasks = [p.task for p in run_pieces if p.task is not None]
    attempts = [p.attempt for p in run_pieces if p.attempt is not None]
    claimed = [p.claimed for p in run_pieces if p.claimed is not None]
    events = [e for p in run_pieces for e in p.events]
    if not events:
        for task_id in tasks:
            cursor = conn.execute("DELETE FROM harvest_tasks WHERE id = %s", (task_id,))
            memory.counted.append((cursor, 1, f"deleting task {task_id}"))
        for values in attempts:
            conn.execute(ATTEMPT, values)
        for values in claimed:
            conn.execute(CLAIMED_TASK, values)
        return
    fields: dict[str, Any] = {}
    for piece in run_pieces:
        fields.update(piece.fields)
    sql, args = _statement(exec_id, tasks, attempts, claimed, events, fields)
    args["size"] = sum(p.size for p in run_pieces)
    cursor = conn.execute(sql, args)
    memory.count_append(cursor, exec_id, events[0][0], len(events), tuple(tasks))


_SHAPES: dict[tuple[int, int, int, tuple[str, ...]], str] = {}


def _statement(
    exec_id: str,
    tasks: list[int],
    attempts: list[tuple[Any, ...]],
    claimed: list[tuple[Any, ...]],
    events: list[Stored],
    fields: dict[str, Any],
) -> tuple[str, dict[str, Any]]:
    """The one statement of a run's pieces, and its arguments (its text cached by shape)."""
    first = events[0][0]
    for offset, event in enumerate(events):
        if event[0] != first + offset:
            raise ValueError(f"held events of {exec_id} are not contiguous")
    _, values = _assignments(fields)  # refuses an unknown column
    shape = (len(tasks), len(attempts), len(claimed), tuple(fields))
    sql = _SHAPES.get(shape)
    if sql is None:
        sql = _SHAPES[shape] = _text(*shape)
    args: dict[str, Any] = {f"f{i}": v for i, v in enumerate(values)}
    args.update(id=exec_id, first=first, end=first + len(events))
    if len(tasks) == 1:
        args["task"] = tasks[0]
    elif tasks:
        args["tasks"] = tasks
    for i, row in enumerate(attempts):
        for j, value in enumerate(row):
            args[f"a{i}_{j}"] = value
    for i, row in enumerate(claimed):
        for j, value in enumerate(row):
            args[f"t{i}_{j}"] = value
    args.update(
        seqs=[e[0] for e in events],
        types=[e[1] for e in events],
        ats=[e[2] for e in events],
        attrs=[e[3] for e in events],
    )
    return sql, args


def _named(prefix: str) -> Callable[[int], str]:
    """Marks %(<prefix>_<j>)s for the j-th value of a row."""
    return lambda j: f"%({prefix}_{j})s"


def _text(tasks: int, attempts: int, claimed: int, names: tuple[str, ...]) -> str:
    ctes: list[str] = []
    guard = ""
    if tasks:
        which = "id = %(task)s" if tasks == 1 else "id = ANY(%(tasks)s::bigint[])"
        ctes.append(f"gone AS (DELETE FROM harvest_tasks WHERE {which} RETURNING id)")
        guard = f" AND (SELECT COUNT(*) FROM gone) = {tasks}"
    if attempts:
        rows = ", ".join(
            "(" + ", ".join(f"%(a{i}_{j})s" for j in range(8)) + ")"
            for i in range(attempts)
        )
        ctes.append(
            f"tried AS (INSERT INTO harvest_activity_attempts ({_ATTEMPT_COLUMNS}) "
            f"VALUES {rows})"
        )
    if claimed:
        rows = ", ".join(_task_marks(_named(f"t{i}")) for i in range(claimed))
        ctes.append(
            f"made AS (INSERT INTO harvest_tasks ({_TASK_COLUMNS}) VALUES {rows})"
        )
    sets = "".join(f", {name} = %(f{i})s" for i, name in enumerate(names))
    ctes.append(
        "moved AS (UPDATE harvest_executions SET next_seq = %(end)s, "
        f"history_bytes = history_bytes + %(size)s{sets} "
        f"WHERE exec_id = %(id)s AND next_seq = %(first)s{guard} RETURNING exec_id)"
    )
    # The events as arrays (unnest): a payload codec finds their attrs there.
    return (
        "WITH "
        + ", ".join(ctes)
        + " INSERT INTO harvest_events (exec_id, seq, type, at, attrs) "
        "SELECT moved.exec_id, e.seq, e.type, e.at, e.attrs FROM moved, "
        "unnest(%(seqs)s::integer[], %(types)s::text[], %(ats)s::bigint[], "
        "%(attrs)s::text[]) AS e(seq, type, at, attrs)"
    )
