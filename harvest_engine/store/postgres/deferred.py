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
(`SEAL`), which goes after the run's other held writes, in the same
statement as the run's held append when there is one (its row's end set by
the append's own UPDATE: one statement a run's end, not two). (The flow tables,
store/sql/flow.py, keep the connection `txn.flow()` gave them, which sent
what was held then; what their later reads count is never held.) The
guards stay: the run's row moves only if its next seq is the first
event's and every held task was still there (the statement's events are
counted before the commit: a task gone or a seq moved fails the
transaction, as the separate statements' counts did).

Several runs' writes sent together go as ONE statement (`held_batch`): a
pass's completions and decisions of its runs, and runs' ends that follow
one another, are one statement each, not one a run.

Savepoints: a joined write's (a decision's) SAVEPOINT is held too, and sent
only before the block's first statement, after the pieces written before
the block: a decision whose writes are all held sends none, and if it fails
its pieces are dropped with nothing to undo on the server.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from harvest_engine.store.postgres import held_batch, held_sql
from harvest_engine.store.postgres.codec_connection import CodecPgConnection
from harvest_engine.store.postgres.held_signals import HeldSignal
from harvest_engine.store.postgres.held_sql import ATTEMPT, CLAIMED_TASK, SEAL, Stored

if TYPE_CHECKING:
    from collections.abc import Sequence

    import psycopg

    from harvest_engine.store.postgres.cursors import Cursors


HELD_FIELDS = held_batch.HELD_FIELDS
"""An append that sets no other field of the run's row may wait for the next statement."""


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
    # A new tick: pieces and blocks are ordered by it (the clock's own
    # __next__: a tick a held write, called without a method of ours).
    now: Callable[[], int] = field(init=False)

    def __post_init__(self) -> None:
        self.now = self.clock.__next__

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
    cursors: Cursors

    def count_append(
        self, exec_id: str, first: int, count: int, tasks: tuple[int, ...]
    ) -> None:
        """Count an append's statement before the commit."""
        ...


def send(conn: psycopg.Connection[tuple[Any, ...]], memory: Memory) -> None:
    """Send the held pieces (few statements: `_send`) and the open blocks' savepoints.

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


_End = tuple[str, list[Piece], dict[str, Any]]
"""A run's end (SEAL's arguments) with its run's pieces held before it."""


def _send(
    conn: psycopg.Connection[tuple[Any, ...]], memory: Memory, pieces: list[Piece]
) -> None:
    """The pieces in order: the runs' writes between runs' ends as one statement.

    A run's end also flags the runs watching it, so it is a barrier: every
    piece held before it (of any run) goes first, every later one after.
    Runs' ends one after the other (each after only its own run's pieces)
    travel together (`held_batch`: the flag a run of them gets from
    another is cleared by its own end either way).
    """
    by_run: dict[str, list[Piece]] = {}
    ends: list[_End] = []  # runs' ends not sent, before every by_run piece
    for piece in pieces:
        if piece.signal is not None:
            # After the run's earlier writes (its flag then outlives theirs).
            _send_ends(conn, memory, ends)
            _send_run(conn, memory, piece.exec_id, by_run.pop(piece.exec_id, []))
            piece.signal.send(conn)
            continue
        if piece.seal is None:
            by_run.setdefault(piece.exec_id, []).append(piece)
            continue
        own = by_run.pop(piece.exec_id, [])
        if by_run:
            _send_ends(conn, memory, ends)
            _send_runs(conn, memory, by_run)
            by_run = {}
        ends.append((piece.exec_id, own, piece.seal))
    _send_ends(conn, memory, ends)
    _send_runs(conn, memory, by_run)


def _batched(conn: psycopg.Connection[tuple[Any, ...]]) -> bool:
    """Whether runs' writes may travel as one statement (a codec encodes each run's own)."""
    return not isinstance(conn, CodecPgConnection)


def _send_runs(
    conn: psycopg.Connection[tuple[Any, ...]],
    memory: Memory,
    by_run: dict[str, list[Piece]],
) -> None:
    """Runs' writes (none ends its run): those that append as one statement, the rest alone."""
    batch: list[tuple[str, list[Piece], None]] = []
    if len(by_run) > 1 and _batched(conn):
        batch = [(e, p, None) for e, p in by_run.items() if held_batch.eligible(p)]
    if len(batch) > 1:
        _send_batch(conn, memory, batch)
        sent = {exec_id for exec_id, _, _ in batch}
        by_run = {e: p for e, p in by_run.items() if e not in sent}
    for exec_id, run_pieces in by_run.items():
        _send_run(conn, memory, exec_id, run_pieces)


def _send_ends(
    conn: psycopg.Connection[tuple[Any, ...]],
    memory: Memory,
    ends: list[_End],
) -> None:
    """Runs' ends in order, each with its run's last writes; as one statement when they all can."""
    if (
        len(ends) > 1
        and _batched(conn)
        and all(_one_statement(own) and held_batch.eligible(own) for _, own, _ in ends)
    ):
        _send_batch(conn, memory, ends)
    else:
        for exec_id, own, seal in ends:
            if _one_statement(own):
                # The run's last writes and its end: one statement (`_text`'s seal).
                _send_run(conn, memory, exec_id, own, seal=seal)
                continue
            _send_run(conn, memory, exec_id, own)
            conn.execute(SEAL, seal)
    ends.clear()


def _one_statement(own: list[Piece]) -> bool:
    """Whether a run's last writes and its end go as one statement (they append, claim nothing)."""
    return any(p.events for p in own) and not any(p.claimed for p in own)


def _send_batch(
    conn: psycopg.Connection[tuple[Any, ...]],
    memory: Memory,
    groups: Sequence[held_batch.Group],
) -> None:
    sql, args, appends = held_batch.statement(groups)
    memory.cursors.execute(conn, "batch", sql, args)  # its result is never read
    for exec_id, first, count, tasks in appends:
        memory.count_append(exec_id, first, count, tasks)


def _send_run(
    conn: psycopg.Connection[tuple[Any, ...]],
    memory: Memory,
    exec_id: str,
    run_pieces: list[Piece],
    seal: dict[str, Any] | None = None,
) -> None:
    """One run's held writes: one statement if they append events (with `seal`, the run's end too)."""
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
    if seal is not None:
        fields.pop("needs_decision", None)  # the end clears it
    sql, args = held_sql.statement(
        exec_id, tasks, attempts, claimed, events, fields, seal
    )
    args["size"] = sum(p.size for p in run_pieces)
    memory.cursors.execute(conn, "run", sql, args)  # its result is never read
    memory.count_append(exec_id, events[0][0], len(events), tuple(tasks))
