"""Many runs' writes in one commit, each decision in a savepoint of its own.

A run alone, and every batch of a store with `bare_batches` (SQLite), take
none at first: a decision that fails then rolls the whole batch back, and
the batch runs again with them.

The batching the group commit pass builds on (`group_commit`, `bodies`):
take runs a few at a time into one transaction, within a size and a time
budget, and forget what a batch touched when its commit fails. It also
holds the pass's state: the commit count, when each run was last decided,
and the claims carried to the next pass.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from harvest_engine.clock import monotonic
from harvest_engine.errors import HarvestError, Stuck
from harvest_engine.store.txn_protocol import JoinedWriteFailed

log = logging.getLogger("harvest_engine.runtime")

if TYPE_CHECKING:
    from harvest_engine.runtime.cache import InstanceCache
    from harvest_engine.runtime.deciding.cycle import Decision
    from harvest_engine.runtime.deciding.decide import Decider
    from harvest_engine.runtime.serving.tasks import TaskRunner
    from harvest_engine.runtime.settings import Settings
    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.store.rows import TaskRecord
    from harvest_engine.store.txn_protocol import WriteTxn

Now = Callable[[], datetime]

Successors = Callable[["WriteTxn", list[str], datetime], list[str]]
"""Admits, in the transaction that ended runs, the queued runs waiting for their slots."""

After = Callable[["WriteTxn", list["Decision"], list[str]], list["Decision"]]
"""More work a batch does in its own transaction after its runs' (successors' decisions)."""

SUCCESSORS_PER_BATCH = 64
"""Queued runs a batch admits and decides at most, beyond its own runs."""


class CommitBatches:
    """`GroupCommit`'s state and its batches: many runs' work per transaction."""

    def __init__(
        self,
        store: DurableStore,
        decider: Decider,
        tasks: TaskRunner,
        cache: InstanceCache,
        settings: Settings,
        successors: Successors | None = None,
    ) -> None:
        self.store = store
        # Flow control's admission of the runs an ending run's slot lets in.
        self.successors = successors
        self.decider = decider
        self.tasks = tasks
        self.cache = cache
        self.settings = settings
        # Tasks claimed by a committed decision whose bodies have not run yet.
        self._carried: list[TaskRecord] = []
        # Committed batches so far, and the batch count at which each run's
        # last progressing decision committed: a pass skips a run of its list
        # that another pass (in flight beside it) decided after the list was
        # read, since that decision saw everything the list did.
        self._commits = 0
        self._decided_at: dict[str, int] = {}
        self._passes = 0
        # A store whose batches may go without savepoints and be redone with
        # them when a decision fails (SQLite: no other worker to stand back for).
        self._bare_first = store.bare_batches

    async def _in_batches(
        self,
        exec_ids: list[str],
        per_run: Callable[[WriteTxn, str], list[Decision]],
        *,
        carry: bool,
        lock: Callable[[WriteTxn, list[str]], set[str]],
        chunk: int | None = None,
        after: After | None = None,
    ) -> list[Decision]:
        """`per_run` for each run, many runs per transaction, yielding between transactions.

        A transaction takes at most `group_commit_size` runs and stops taking
        more once it has held the thread for `group_commit_seconds`, so a
        host loop (the GUI's) is never held long; which runs share a commit
        changes no history. `lock` takes the next runs of a transaction
        together, `chunk` at a time (default: all it may take), before their
        turn (`WriteTxn.lock_runs`); the runs it leaves out are passed over.
        `after` does more in each transaction once its runs are done (it
        adds the runs it decides to the batch's, to forget them if it fails).
        """
        if len(exec_ids) == 1:
            # One run: its writes share the commit with nobody else's.
            exec_id = exec_ids[0]
            alone = [exec_id]

            def one(txn: WriteTxn) -> list[Decision]:
                del alone[1:]  # a second try (with savepoints) starts again
                decisions = per_run(txn, exec_id)
                return (
                    decisions
                    if after is None
                    else decisions + after(txn, decisions, alone)
                )

            return self._in_batch(alone, one, carry=carry, alone=True)
        size = max(1, self.settings.group_commit_size)
        step = size if chunk is None else max(1, chunk)
        budget = self.settings.group_commit_seconds
        pending = collections.deque(exec_ids)
        decided: list[Decision] = []
        while pending:
            taken: list[str] = []
            # What a redo with savepoints starts again from (`_in_batch`).
            before = list(pending) if self._bare_first else None

            def work(txn: WriteTxn, taken: list[str] = taken) -> list[Decision]:
                decisions: list[Decision] = []
                locked: set[str] = set()
                left_out: set[str] = set()
                deadline = monotonic() + budget
                while pending and len(taken) < size:
                    if pending[0] not in locked:
                        ahead = min(step, size - len(taken))
                        batch = list(itertools.islice(pending, ahead))
                        locked.update(batch)
                        left_out |= lock(txn, batch)
                    exec_id = pending.popleft()
                    if exec_id in left_out:
                        continue  # another worker holds it, or decided it
                    taken.append(exec_id)
                    decisions += per_run(txn, exec_id)
                    if monotonic() >= deadline:
                        break
                if after is not None:
                    decisions += after(txn, decisions, taken)
                return decisions

            def again(
                taken: list[str] = taken, before: list[str] | None = before
            ) -> None:
                pending.clear()
                pending.extend(before or ())
                taken.clear()

            decided += self._in_batch(
                taken, work, carry=carry, redo=None if before is None else again
            )
            if pending:
                await asyncio.sleep(0)
        return decided

    def _decide(
        self,
        exec_ids: Iterable[str],
        now: Now,
        errors: list[HarvestError],
        *,
        claim: bool = True,
    ) -> list[Decision]:
        """Decide each run in its own savepoint of the open batch; collect claims."""
        decisions: list[Decision] = []
        for exec_id in exec_ids:
            try:
                decision = self.decider.decide(exec_id, now(), claim=claim)
                if decision.stuck:
                    raise Stuck(exec_id=exec_id)
            except HarvestError as exc:
                # The pass raises the first error; each one is logged, so a
                # second failing run in the same batch is reported too.
                log.warning("run %s: %s: %s", exec_id, type(exc).__name__, exc)
                errors.append(exc)
                continue
            decisions.append(decision)
        return decisions

    def _successors(self, now: Now, errors: list[HarvestError]) -> After | None:
        """A batch's `after`: admit into the slots its ended runs freed, and decide the runs let in.

        The successors' first decisions join the same commit and claim their
        first activities, carried to the next pass like every claim (unless
        other workers serve the database: `Settings.share_successors`): the
        slot-freeing commit starts the next run, with no admission pass or
        commit between. A successor that ends at once frees its slot again,
        up to SUCCESSORS_PER_BATCH runs.
        """
        successors = self.successors
        if successors is None:
            return None

        def after(
            txn: WriteTxn, decisions: list[Decision], taken: list[str]
        ) -> list[Decision]:
            decided: list[Decision] = []
            ended = [d.exec_id for d in decisions if d.terminal]
            if not ended:
                return decided
            share = self.settings.share_successors
            claim = share is None or not share()
            while ended and len(decided) < SUCCESSORS_PER_BATCH:
                admitted = successors(txn, ended, now())
                if not admitted:
                    break
                taken.extend(admitted)
                left_out = txn.lock_runs(admitted, deciding_at=now())
                fresh = [e for e in admitted if e not in left_out]
                more = self._decide(fresh, now, errors, claim=claim)
                decided += more
                ended = [d.exec_id for d in more if d.terminal]
            return decided

        return after

    def _in_batch(
        self,
        exec_ids: list[str],
        work: Callable[[WriteTxn], list[Decision]],
        *,
        carry: bool = True,
        alone: bool = False,
        redo: Callable[[], None] | None = None,
    ) -> list[Decision]:
        """Run `work` in one batch; on a failed commit forget what it touched, then raise.

        With `carry`, the claims of the committed decisions wait for the next
        pass; without, the caller runs them itself. `alone`: the batch holds
        one run's work (its completions and its decision), whose decision
        then takes no savepoint; if it fails, everything rolled back and the
        batch runs again with savepoints, so the completions commit without
        the failed decision, as in any batch (`JoinedWriteFailed`). `redo`
        does the same for a batch of many runs (a store's `bare_batches`):
        it puts back what `work` took before the batch runs again.
        """
        bare = alone or redo is not None
        try:
            with self.store.write_together(savepoints=not bare) as txn:
                decisions = work(txn)
        except JoinedWriteFailed:
            for exec_id in exec_ids:
                self.cache.evict(exec_id)
            if not bare:
                raise
            if redo is not None:
                redo()
            return self._in_batch(exec_ids, work, carry=carry)
        except BaseException:
            for exec_id in exec_ids:
                self.cache.evict(exec_id)
            raise
        self._commits += 1
        for decision in decisions:
            if decision.progressed:
                self._decided_at[decision.exec_id] = self._commits
        if carry:
            for decision in decisions:
                self._carried.extend(decision.claimed)
        return decisions
