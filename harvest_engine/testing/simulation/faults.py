"""SimulatedStore: a real store whose statements, commits and process the seed breaks.

It wraps any `DurableStore` (SQLite on a file here; Postgres alike) and is
handed to `Runtime(store, clock=...)` like the real one. Every store call
and every `WriteTxn` call is a *statement*; before each one the fault plan
may crash the simulated process (`SimulatedCrash`, a BaseException nothing
in the engine catches for good: every later call on this store raises it
again, so no cleanup reaches the disk and only what committed survives).
At each outermost commit the plan may fail it (the driver's own error for
a full disk, an I/O error or a lost connection, raised inside the
transaction so the real store rolls back and translates it), crash just
before or just after it, or delay it (the simulated clock moves on).
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from harvest_engine.errors import StorageError

if TYPE_CHECKING:
    import random
    from collections.abc import Callable, Iterator

    from harvest_engine.clock import ManualClock
    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.store.txn_protocol import WriteTxn

# The store calls that commit a transaction of their own (the rest read, or
# only remember: `release_claim` waits for the next write, `beat_serving`
# touches a file), so only these get commit faults.
_OWN_WRITES = frozenset({"claim_task", "save_heartbeat", "requeue_claimed_tasks"})

# Faults that cannot lose a recorded outcome.
_HARMLESS = frozenset({"delay", "reorder"})

# What a failed commit raises, by fault kind: the typed error a store raises
# for it (each store's `storage_errors` holds StorageError).
COMMIT_FAILURES: dict[str, str] = {
    "disk_full": "database or disk is full",
    "io_error": "disk I/O error",
    "lost_connection": "the connection to the database was lost",
}


class SimulatedCrash(BaseException):
    """The simulated process died at this statement; the harness reopens the store."""


class FaultPlan:
    """Which faults the seed injects and how often; `active` is off once faults stop.

    Rates are per statement (crash) and per outermost commit (the others).
    Every draw comes from `rng`, so a seed replays the same faults at the
    same statements; `counts` tallies what was injected, by kind.
    """

    def __init__(
        self,
        rng: random.Random,
        *,
        crash: float = 0.002,
        commit_failure: float = 0.03,
        commit_crash: float = 0.01,
        delay: float = 0.05,
        reorder: float = 0.1,
    ) -> None:
        self.rng = rng
        self.crash = crash
        self.commit_failure = commit_failure
        self.commit_crash = commit_crash
        self.delay = delay
        self.reorder = reorder
        self.active = True
        self.counts: Counter[str] = Counter()
        self.statements = 0
        self.notes: list[str] = []

    def _draw(self, rate: float) -> bool:
        return self.active and rate > 0 and self.rng.random() < rate

    def held_back(self) -> bool:
        """Whether the network holds a client's command back, to arrive after later ones."""
        if self._draw(self.reorder):
            self.counts["reorder"] += 1
            return True
        return False

    def disruptions(self) -> int:
        """Faults so far that can lose a body's recorded outcome (crashes, failed commits)."""
        return sum(n for kind, n in self.counts.items() if kind not in _HARMLESS)

    def injected(self, kind: str, where: str) -> None:
        """Count a fault and note it for the trace."""
        self.counts[kind] += 1
        self.notes.append(f"fault {kind} at {where}")


class SimulatedStore:
    """A `DurableStore` that forwards to `inner` and injects the plan's faults."""

    def __init__(
        self, inner: DurableStore, plan: FaultPlan, clock: ManualClock
    ) -> None:
        self.inner = inner
        self.plan = plan
        self.clock = clock
        self.crashed = False
        self.storage_errors = inner.storage_errors
        self.boundary = inner.boundary
        self.bare_batches = inner.bare_batches
        self._depth = 0

    # -- the fault points ---------------------------------------------------------

    def statement(self, name: str) -> None:
        """Before each statement: raise if the process is dead, or kill it here."""
        if self.crashed:
            raise SimulatedCrash(name)
        self.plan.statements += 1
        if self.plan._draw(self.plan.crash):
            self._crash(f"statement {name}")

    def _crash(self, where: str) -> None:
        self.crashed = True
        self.plan.injected("crash", where)
        raise SimulatedCrash(where)

    def _before_commit(self, what: str) -> None:
        plan = self.plan
        if plan._draw(plan.delay):
            seconds = plan.rng.choice((1, 5, 30, 120))
            self.clock.advance(seconds)
            plan.injected("delay", f"commit of {what} (+{seconds}s)")
        if plan._draw(plan.commit_crash):
            self._crash(f"commit of {what}")
        if plan._draw(plan.commit_failure):
            kind = plan.rng.choice(sorted(COMMIT_FAILURES))
            plan.injected(kind, f"commit of {what}")
            raise StorageError(path="simulated", reason=COMMIT_FAILURES[kind])

    def _after_commit(self, what: str) -> None:
        if self.plan._draw(self.plan.commit_crash):
            self._crash(f"after commit of {what}")

    # -- transactions -------------------------------------------------------------

    @contextmanager
    def _wrapped(self, open_txn: Callable[[], Any], what: str) -> Iterator[Any]:
        self.statement(what)
        outermost = self._depth == 0
        self._depth += 1
        try:
            with open_txn() as txn:
                yield SimulatedTxn(txn, self)
                if self.crashed:
                    raise SimulatedCrash(what)
                if outermost:
                    self._before_commit(what)
        finally:
            self._depth -= 1
        if outermost:
            self._after_commit(what)

    def write(self) -> Any:
        """One write transaction of the real store, with the plan's faults."""
        return self._wrapped(self.inner.write, "write")

    def write_together(self, *, savepoints: bool = True) -> Any:
        """The real store's joined transaction, with the plan's faults."""
        return self._wrapped(
            lambda: self.inner.write_together(savepoints=savepoints), "write_together"
        )

    def close(self) -> None:
        """Close the real store (a dead process's connection goes too)."""
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if not callable(value):
            return value

        if name.startswith("add_") and name.endswith("_listener"):
            return value  # the runtime wiring itself up: no storage

        def call(*args: Any, **kwargs: Any) -> Any:
            self.statement(name)
            if name in _OWN_WRITES and self._depth == 0:
                self._before_commit(name)
                result = value(*args, **kwargs)
                self._after_commit(name)
                return result
            return value(*args, **kwargs)

        return call


class SimulatedTxn:
    """A `WriteTxn` whose every call is a statement the plan may crash at."""

    def __init__(self, inner: WriteTxn, store: SimulatedStore) -> None:
        self._inner = inner
        self._store = store

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value):
            return value
        store = self._store

        def call(*args: Any, **kwargs: Any) -> Any:
            store.statement(f"txn.{name}")
            return value(*args, **kwargs)

        return call
