"""Gatekeeper: one runtime's admission step of each pass, and when it must next wake for one.

A pass first admits what the queues let in (runs, then activity
attempts), each queue in its own transaction, then decides and claims as
before. Waiting costs nothing: what holds a queue is remembered, and
`next_due` wakes the server only when a rate token or a start delay comes
due, or an attempt's schedule_to_start runs out; a queue waiting for a slot
is woken by the pass in which a run or an attempt ends. A runtime that
never declared a queue or a limit, on a store that holds none, pays one
read for it ever.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING

from harvest_engine.runtime.flow import gates
from harvest_engine.runtime.flow.admission import Admission, admit_queue

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.runtime.engine import Engine
    from harvest_engine.runtime.flow.gates import TimeOut
    from harvest_engine.runtime.registry import RegisteredActivity
    from harvest_engine.store.sql.flow_rows import WaitingTask
    from harvest_engine.store.txn_protocol import WriteTxn

RECHECK_EVERY = 0.25
"""Seconds after which a queue held for a slot is looked at again, whatever happened."""

SWEEP_EVERY = 5.0
"""Seconds between sweeps of waiting rows whose run ended some other way."""

MAX_SLOTS_KNOWN = 100_000
"""Admitted runs whose queues are remembered; past it the memory starts again."""

_SLOT = "slot"
"""A queue held for a slot: nothing to wake for until a run or an attempt ends."""

_SLOT_LIMITS = frozenset({"concurrency", "worker_concurrency", "partition_concurrency"})
"""The limits a run's end (or a wake) frees, not the clock."""


class Gatekeeper:
    """Admits waiting runs and attempts for one runtime; knows when next to."""

    def __init__(
        self,
        engine: Engine,
        on_timeout: TimeOut,
        knows_name: Callable[[str, str], None] | None = None,
    ) -> None:
        self.engine = engine
        self.on_timeout = on_timeout
        # Told each admitted run's workflow name (its activities' context).
        self.knows_name = knows_name
        self._stored: bool | None = None
        # What held each queue at its last admission: a slot, or a rate token's time.
        self._held: dict[str, datetime | str] = {}
        self._next_sweep = 0.0
        # When each queue was last looked at: (evictions, wakes) then, recheck time.
        self._looked: dict[str, tuple[tuple[int, int], float]] = {}
        # The queues whose slots each run this runtime admitted holds.
        self._slots: dict[str, tuple[str, ...]] = {}

    def in_use(self) -> bool:
        """Whether anything may wait: a declared queue or limit, or stored queue rows."""
        registry = self.engine.registry
        if registry.queues or registry.workflow_limits:
            return True
        if registry.activity_limits_declared:
            return True
        if self._stored is None:
            with self.engine.store.flow_reads() as reads:
                self._stored = bool(reads.queue_rows())
        return self._stored

    def forget(self) -> None:
        """Limits changed (a queue registered): look at every queue again."""
        self._held.clear()
        self._looked.clear()
        self._stored = None

    def admit(self, now: datetime) -> bool:
        """Admit every run and attempt the limits let in now; whether any moved."""
        if not self.in_use():
            return False
        with self.engine.store.flow_reads() as reads:
            queues, tasks = reads.waiting()
        moved = False
        registry, store = self.engine.registry, self.engine.store
        sweep = self._sweep_due()
        marks = (self.engine.cache.evictions, self.engine.waker.wakes)
        for queue, earliest in queues:
            if (earliest > now or self._unchanged(queue, marks)) and not sweep:
                continue
            with store.write() as txn:
                if sweep:
                    txn.flow().drop_waiting_ended(queue)
                got = admit_queue(registry, txn, queue, now)
            self._admitted(got)
            self._note(queue, len(got.admitted), got.held, got.token, runs=True)
            self._looked[queue] = (marks, time.monotonic() + RECHECK_EVERY)
            moved = moved or bool(got.admitted)
        for gate, waiting in self._by_gate(tasks).items():
            with store.write() as txn:
                opened, held, token = gates.open_gate(
                    txn, gate, waiting, now, self.on_timeout
                )
            self._note(gate, opened, held, token)
            moved = moved or opened > 0
        if moved:
            self.engine.waker.wake()
        return moved

    def admit_successors(
        self, txn: WriteTxn, ended: list[str], now: datetime
    ) -> list[str]:
        """In the transaction that ended these runs, admit the runs waiting for their slots.

        The slot-freeing commit admits the successors itself (no admission
        transaction of its own, no pass in between): only the queues of runs
        this runtime admitted are known here; another worker's runs free
        their slots for the next admission pass. A queue another worker is
        admitting into is passed over, never waited for (this transaction
        holds its runs already). Returns the admitted runs, in order.
        """
        freed: dict[str, tuple[str, ...]] = {}
        for exec_id in ended:
            queues = self._slots.pop(exec_id, None)
            if queues is not None:
                freed[exec_id] = queues
        if not freed:
            return []
        txn.on_rollback(lambda: self._slots.update(freed))
        admitted: list[str] = []
        registry = self.engine.registry
        marks = (self.engine.cache.evictions, self.engine.waker.wakes)
        slots = Counter(q for queues in freed.values() for q in queues)
        for queue in sorted(slots):
            token = self._held.get(queue)
            if isinstance(token, datetime) and token > now:
                continue  # its rate holds it: admitted when the token is due
            got = admit_queue(registry, txn, queue, now, wait=False, freed=slots[queue])
            if not got.locked:
                continue  # another worker admits into it now
            self._admitted(got)
            self._note(queue, len(got.admitted), got.held, got.token, runs=True)
            self._looked[queue] = (marks, time.monotonic() + RECHECK_EVERY)
            txn.on_rollback(functools.partial(self._forget_queue, queue))
            admitted += [w.exec_id for w in got.admitted]
        return admitted

    def _admitted(self, got: Admission) -> None:
        """Remember which queues' slots these runs hold, for the transaction that ends them."""
        waits = got.admitted
        if len(self._slots) + len(waits) > MAX_SLOTS_KNOWN:
            self._slots.clear()  # runs that ended elsewhere: their ends are swept
        if self.knows_name is not None and got.names:
            for exec_id, name in got.names.items():
                self.knows_name(exec_id, name)
        for wait in waits:
            also = () if wait.workflow_queue is None else (wait.workflow_queue,)
            self._slots[wait.exec_id] = (wait.queue, *also)

    def _forget_queue(self, queue: str) -> None:
        self._held.pop(queue, None)
        self._looked.pop(queue, None)

    def next_due(self) -> datetime | None:
        """When waiting work may next move: a token, a delay or a schedule_to_start (None: never)."""
        if not self.in_use():
            return None
        with self.engine.store.flow_reads() as reads:
            queues, tasks = reads.waiting()
        dues: list[datetime] = []
        for queue, earliest in queues:
            held = self._held.get(queue)
            if isinstance(held, str):  # waits for a slot
                continue
            dues.append(earliest if held is None else max(held, earliest))
        for gate, waiting in self._by_gate(tasks).items():
            held = self._held.get(gate)
            for task, activity in waiting:
                expiry = gates.expires_at(activity, task)
                if expiry is not None:
                    dues.append(expiry)
            if not isinstance(held, str):
                first = min(task.ready_at for task, _ in waiting)
                dues.append(first if held is None else max(held, first))
        return min(dues) if dues else None

    def _unchanged(self, queue: str, marks: tuple[int, int]) -> bool:
        """Whether a queue held for a slot can be passed over: nothing ended or woke since.

        A run that ends here is evicted from the cache, an in-process call
        wakes the loop; either may free a slot or change a queue. Another
        worker's ends are not seen here: the queue is looked at again after
        RECHECK_EVERY seconds whatever happened (and that worker admits too).
        """
        if self._held.get(queue) != _SLOT:
            return False
        looked = self._looked.get(queue)
        return (
            looked is not None and looked[0] == marks and time.monotonic() < looked[1]
        )

    def _sweep_due(self) -> bool:
        """Whether to sweep waiting rows of ended runs now (every SWEEP_EVERY seconds).

        Ends the start and the cancel know of drop their row at once; a sweep
        catches any other (a run sealed by a path that does not look at queues).
        """
        at = time.monotonic()
        if at < self._next_sweep:
            return False
        self._next_sweep = at + SWEEP_EVERY
        return True

    def _note(
        self,
        queue: str,
        moved: int,
        held: str | None,
        token: datetime | None,
        *,
        runs: bool = False,
    ) -> None:
        """Remember what holds a queue: a token's time, a slot, or nothing (look again).

        A queue of runs that admitted up to a slot limit is full: only an
        end frees a slot (it evicts the run) or a wake changes it.
        """
        if held == "rate" and token is not None:
            self._held[queue] = token
        elif held is not None and (moved == 0 or (runs and held in _SLOT_LIMITS)):
            self._held[queue] = _SLOT
        else:
            self._held.pop(queue, None)

    def _by_gate(
        self, tasks: list[WaitingTask]
    ) -> dict[str, list[tuple[WaitingTask, RegisteredActivity]]]:
        grouped: dict[str, list[tuple[WaitingTask, RegisteredActivity]]] = {}
        registry = self.engine.registry
        for task in tasks:
            found = gates.gate_of(registry, task)
            if found is not None:
                grouped.setdefault(found[0], []).append((task, found[1]))
        return grouped
