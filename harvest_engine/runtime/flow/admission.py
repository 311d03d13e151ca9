"""Admission: waiting runs into free slots, in priority then arrival order, partitions in turn.

Each queue is admitted in one write transaction that first locks the
queue's row (Postgres: FOR UPDATE; SQLite's one writer holds the file),
then counts the slots held, takes the rate tokens and flips the admitted
runs RUNNING, so two workers never both fill one free slot. A slot is a
RUNNING run's wait row: a run that ends frees it, whoever ran it, so a
killed worker's slots come back as its runs go on elsewhere and end.

Rates are evenly spaced: each admission moves the queue's next token by
per / limit, and nothing is admitted before it is due.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, NamedTuple

from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.runtime.registry import Registry
    from harvest_engine.store.sql.flow import FlowTables
    from harvest_engine.store.sql.flow_rows import LockedRun, QueueRow, WaitRow
    from harvest_engine.store.txn_protocol import WriteTxn

# How many candidates one admission reads per free slot, so round robin over
# partitions and skipping full ones still finds work behind them.
LOOKAHEAD = 4
MIN_CANDIDATES = 64

# Limits that hold every waiting run of a queue at once (not one partition's).
_WHOLE_QUEUE = frozenset({"concurrency", "worker_concurrency", "rate"})
_SLOT_LIMIT = "concurrency"


class Limiter:
    """One queue's free slots and rate tokens while an admission transaction holds its row."""

    def __init__(
        self,
        tables: FlowTables,
        row: QueueRow,
        now: datetime,
        free: float,
        partitions: dict[str | None, int],
    ) -> None:
        self.tables = tables
        self.row = row
        self.now_us = micros(now)
        self.free = free
        self.token = row.next_token_at
        self.interval = row.interval_us
        self.partitions = partitions
        self.moved_token = False

    @classmethod
    def for_runs(cls, tables: FlowTables, row: QueueRow, now: datetime) -> Limiter:
        """The queue's limiter over runs: ended runs' rows dropped, slots counted."""
        tables.release_ended(row.name)
        free = math.inf
        if row.concurrency is not None:
            free = row.concurrency - tables.running(row.name)
        if row.worker_concurrency is not None:
            free = min(free, row.worker_concurrency - tables.running_here(row.name))
        partitions = (
            tables.running_partitions(row.name)
            if row.partition_concurrency is not None
            else {}
        )
        return cls(tables, row, now, free, partitions)

    @classmethod
    def for_tasks(cls, tables: FlowTables, row: QueueRow, now: datetime) -> Limiter:
        """The queue's limiter over activity attempts (the caller counts the slots)."""
        return cls(tables, row, now, math.inf, {})

    def held_by(self, partition: str | None = None) -> str | None:
        """The limit refusing one more admission now (None: it may go)."""
        row = self.row
        if self.free <= 0:
            if row.concurrency is not None and row.worker_concurrency is None:
                return "concurrency"
            return (
                "worker_concurrency"
                if row.worker_concurrency is not None
                else "concurrency"
            )
        if (
            row.partition_concurrency is not None
            and self.partitions.get(partition, 0) >= row.partition_concurrency
        ):
            return "partition_concurrency"
        if self.interval is not None and self.token > self.now_us:
            return "rate"
        return None

    def take(self, partition: str | None = None) -> None:
        """Count one admission: a slot, a partition's slot and a token."""
        self.free -= 1
        if self.row.partition_concurrency is not None:
            self.partitions[partition] = self.partitions.get(partition, 0) + 1
        if self.interval is not None:
            self.token = max(self.token, self.now_us) + self.interval
            self.moved_token = True

    def save(self) -> None:
        """Store the moved rate token."""
        if self.moved_token:
            self.tables.set_next_token(self.row.name, self.token)

    @property
    def next_token(self) -> datetime | None:
        """When the next rate token is due (None without a rate)."""
        return None if self.interval is None else from_micros(self.token)


def round_robin(waits: list[WaitRow]) -> list[WaitRow]:
    """The waits with partitions taking turns, each partition in its own order."""
    if all(w.partition_key == waits[0].partition_key for w in waits):
        return waits
    lanes: OrderedDict[str | None, deque[WaitRow]] = OrderedDict()
    for wait in waits:
        lanes.setdefault(wait.partition_key, deque()).append(wait)
    order: list[WaitRow] = []
    while lanes:
        for key in list(lanes):
            lane = lanes[key]
            order.append(lane.popleft())
            if not lane:
                del lanes[key]
    return order


class Admission(NamedTuple):
    """What one admission into a queue did."""

    admitted: list[WaitRow]
    """The waits of the runs it flipped RUNNING, in admission order."""
    held: str | None
    """The limit holding the rest (None when none waits)."""
    token: datetime | None
    """When the queue's next rate token is due (None without a rate)."""
    locked: bool = True
    """False: another worker held the queue's row and nothing was looked at."""
    names: dict[str, str] | None = None
    """The admitted runs' workflow names, by exec_id."""


def admit_queue(
    registry: Registry,
    txn: WriteTxn,
    queue: str,
    now: datetime,
    *,
    wait: bool = True,
    freed: int | None = None,
) -> Admission:
    """Admit what the queue's limits let in now.

    The queue's row is locked first and everything counted behind it; the
    runs picked are locked next (a run a cancel ended meanwhile drops out)
    and flipped RUNNING. Without `wait` (a transaction that holds other runs
    already), a queue or a run another worker holds is passed over instead
    of waited for. `freed`: how many slots the caller's ends freed, to read
    only as many candidates as those slots need (a queue of partitions reads
    further, to find partitions not full).
    """
    tables = txn.flow()
    row = tables.open_admission(
        queue, now, _candidates_to_read(registry, queue, freed), wait=wait
    )
    if row is None:
        # A queue no process stored (yet): its runs wait; or another worker's.
        return Admission([], _SLOT_LIMIT, None, locked=wait)
    limiter = Limiter.for_runs(tables, row, now)
    held = limiter.held_by()
    if held in _WHOLE_QUEUE:
        return Admission([], held, limiter.next_token)
    wanted = limiter.free if limiter.free != math.inf else MIN_CANDIDATES
    limit = int(max(MIN_CANDIDATES, wanted * LOOKAHEAD))
    others: dict[str, Limiter | None] = {}
    picked: list[WaitRow] = []
    for wait_row in round_robin(tables.candidates(queue, now, limit)):
        held = limiter.held_by(wait_row.partition_key)
        if held in _WHOLE_QUEUE:
            break
        if held is not None:
            continue  # its partition is full: the next partition's turn
        if wait_row.run_state != "ENQUEUED":
            tables.drop_wait(wait_row.exec_id)  # it ended while it waited
            continue
        also, busy = _workflow_limiter(
            tables, others, wait_row.workflow_queue, now, wait=wait
        )
        if busy:
            held = None  # its workflow's queue is another worker's now: look again
            break
        if also is not None:
            held = also.held_by()
            if held is not None:
                continue
        picked.append(wait_row)
        limiter.take(wait_row.partition_key)
        if also is not None:
            also.take()
    locked = tables.lock_enqueued([w.exec_id for w in picked], wait=wait)
    tables.admit([w.exec_id for w in picked if w.exec_id in locked], now)
    txn.admit_runs(
        [
            (w.exec_id, _deadline(registry, w, locked[w.exec_id], now))
            for w in picked
            if w.exec_id in locked
        ]
    )
    limiter.save()
    for other in others.values():
        if other is not None:
            other.save()
    admitted = [w for w in picked if w.exec_id in locked]
    if len(admitted) < len(picked):
        held = None  # a slot counted for a run that dropped out: look again
    else:
        held = limiter.held_by() or held
    names = {exec_id: run.workflow_name for exec_id, run in locked.items()}
    return Admission(admitted, held, limiter.next_token, names=names)


def _candidates_to_read(registry: Registry, queue: str, freed: int | None) -> int:
    """How many waiting runs an admission reads before it knows the free slots."""
    declared = registry.queues.get(queue)
    if declared is None:
        return MIN_CANDIDATES
    if freed is not None and declared.partition_concurrency is None:
        # A run that ended while it waited is passed over: read a few more.
        return freed + LOOKAHEAD
    return max(MIN_CANDIDATES, (declared.concurrency or 0) * LOOKAHEAD)


def _workflow_limiter(
    tables: FlowTables,
    known: dict[str, Limiter | None],
    name: str | None,
    now: datetime,
    *,
    wait: bool,
) -> tuple[Limiter | None, bool]:
    """The limiter of a workflow's own queue a run of another queue also obeys.

    The flag says another worker holds that queue's row (only without `wait`).
    """
    if name is None:
        return None, False
    if name not in known:
        row = tables.queue(name, lock=True, wait=wait)
        if row is None and not wait and tables.queue(name) is not None:
            return None, True
        known[name] = None if row is None else Limiter.for_runs(tables, row, now)
    return known[name], False


def _deadline(
    registry: Registry, wait: WaitRow, locked: LockedRun, now: datetime
) -> datetime | None:
    """An admitted run's deadline, which starts now (`WriteTxn.admit_runs` flips it RUNNING).

    A run that kept its deadline while it waited (a child with its own
    execution_timeout) has it moved on by the wait; else the workflow's.
    """
    info = registry.workflows.get(locked.workflow_name)
    if locked.deadline is not None:
        return locked.deadline + (now - wait.enqueued_at)
    if info is not None and info.execution_timeout is not None:
        return now + info.execution_timeout
    return None
