"""The batched pass: many runs' decisions, claims and completions per commit.

A pass decides every run with ready work in one transaction, each decision
in its own savepoint, and claims the activity tasks those decisions schedule
in the same savepoint; it claims the other ready tasks in one transaction,
runs the bodies side by side (bounded), then records the completions in one
transaction together with the follow-up decision of each run, whose claims
carry over to the next pass. A run that fails rolls back its savepoint alone
(its instance is evicted) and is reported; the others commit. Nothing is
reported done before its commit, and a failed commit evicts every instance
the batch touched and drops its claims.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from harvest_engine.errors import HarvestError, Stuck
from harvest_engine.runtime import eager
from harvest_engine.store.protocol import JoinedWriteFailed

log = logging.getLogger("harvest_engine.runtime")

if TYPE_CHECKING:
    from harvest_engine.runtime.cache import InstanceCache
    from harvest_engine.runtime.cycle import Decision
    from harvest_engine.runtime.decide import Decider
    from harvest_engine.runtime.settings import Settings
    from harvest_engine.runtime.tasks import Finished, TaskRunner
    from harvest_engine.store.protocol import DurableStore, TaskRecord, WriteTxn

Now = Callable[[], datetime]

DECISION_LOCKS = 16
"""Runs a decision batch locks per statement (a shared store's round trip)."""


class GroupCommit:
    """Drives the fleet with few commits; owns the claims carried between passes."""

    def __init__(
        self,
        store: DurableStore,
        decider: Decider,
        tasks: TaskRunner,
        cache: InstanceCache,
        settings: Settings,
    ) -> None:
        self.store = store
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

    # -- the pass ------------------------------------------------------------------

    async def run_pass(self, now: Now) -> tuple[bool, list[HarvestError]]:
        """Decide, claim, run bodies, record + decide; (whether anything moved, every error)."""
        errors: list[HarvestError] = []
        if not self._passes:
            self._decided_at.clear()  # no pass holds an older list
        self._passes += 1
        try:
            listed_at = self._commits
            exec_ids = self.store.runs_needing_decision(now())
            progressed = await self._decide_all(
                exec_ids, now, errors, listed_at=listed_at
            )
        finally:
            self._passes -= 1
        claimed = self.take_carried(None)
        try:
            claimed += self._claim_ready(None, now)
        except BaseException:
            self._release(claimed)
            raise
        if claimed:
            await self._run_and_record(claimed, now, errors, carry=True)
            progressed = True
        return progressed or bool(self._carried), errors

    @property
    def has_carried(self) -> bool:
        """Whether claims wait for the next pass (the serving loop starts one for them)."""
        return bool(self._carried)

    def take_carried(self, exec_id: str | None) -> list[TaskRecord]:
        """Hand over the carried claims (of one run, or all) that are still claimed.

        A claim whose task went away meanwhile (the run was terminated or
        sealed between passes) is dropped, so its body never runs.
        """
        if not self._carried:
            return []
        if exec_id is None:
            taken, self._carried = self._carried, []
        else:
            taken = [t for t in self._carried if t.exec_id == exec_id]
            self._carried = [t for t in self._carried if t.exec_id != exec_id]
        if not taken:
            return []
        try:
            alive = self.store.claimed_task_ids([t.id for t in taken])
        except BaseException:  # no answer: kept, or they would stay RUNNING unrun
            self._carried = taken + self._carried
            raise
        return [t for t in taken if t.id in alive]

    # -- decisions -----------------------------------------------------------------

    async def _decide_all(
        self,
        exec_ids: list[str],
        now: Now,
        errors: list[HarvestError],
        *,
        listed_at: int | None = None,
    ) -> bool:
        """Decide the listed runs, but not one decided since the list was read.

        Passes overlap (a new one starts while an older one awaits bodies), so
        a run may be on two lists; the later decision would find nothing new.
        `listed_at` is the commit count when the list was read (default: now).
        """
        if listed_at is None:
            listed_at = self._commits

        def decide(txn: WriteTxn, exec_id: str) -> list[Decision]:
            del txn  # each decision takes its own savepoint
            if self._decided_at.get(exec_id, -1) > listed_at:
                return []
            return self._decide([exec_id], now, errors)

        def lock(txn: WriteTxn, batch: list[str]) -> set[str]:
            fresh = [e for e in batch if self._decided_at.get(e, -1) <= listed_at]
            return txn.lock_runs(fresh, deciding_at=now())

        # A decision batch locks a few runs at a time: one that stops at its
        # time budget then holds few runs it did not decide (another worker
        # skips the runs it holds).
        decisions = await self._in_batches(
            exec_ids, decide, carry=True, lock=lock, chunk=DECISION_LOCKS
        )
        return any(d.progressed for d in decisions)

    async def _in_batches(
        self,
        exec_ids: list[str],
        per_run: Callable[[WriteTxn, str], list[Decision]],
        *,
        carry: bool,
        lock: Callable[[WriteTxn, list[str]], set[str]],
        chunk: int | None = None,
    ) -> list[Decision]:
        """`per_run` for each run, many runs per transaction, yielding between transactions.

        A transaction takes at most `group_commit_size` runs and stops taking
        more once it has held the thread for `group_commit_seconds`, so a
        host loop (the GUI's) is never held long; which runs share a commit
        changes no history. `lock` takes the next runs of a transaction
        together, `chunk` at a time (default: all it may take), before their
        turn (`WriteTxn.lock_runs`); the runs it leaves out are passed over.
        """
        if len(exec_ids) == 1:
            # One run: its writes share the commit with nobody else's.
            exec_id = exec_ids[0]
            return self._in_batch(
                exec_ids, lambda txn: per_run(txn, exec_id), carry=carry, alone=True
            )
        size = max(1, self.settings.group_commit_size)
        step = size if chunk is None else max(1, chunk)
        budget = self.settings.group_commit_seconds
        pending = collections.deque(exec_ids)
        decided: list[Decision] = []
        while pending:
            taken: list[str] = []

            def work(txn: WriteTxn, taken: list[str] = taken) -> list[Decision]:
                decisions: list[Decision] = []
                locked: set[str] = set()
                left_out: set[str] = set()
                deadline = time.monotonic() + budget
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
                    if time.monotonic() >= deadline:
                        break
                return decisions

            decided += self._in_batch(taken, work, carry=carry)
            if pending:
                await asyncio.sleep(0)
        return decided

    def _decide(
        self, exec_ids: Iterable[str], now: Now, errors: list[HarvestError]
    ) -> list[Decision]:
        """Decide each run in its own savepoint of the open batch; collect claims."""
        decisions: list[Decision] = []
        for exec_id in exec_ids:
            try:
                decision = self.decider.decide(exec_id, now(), claim=True)
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

    def _in_batch(
        self,
        exec_ids: list[str],
        work: Callable[[WriteTxn], list[Decision]],
        *,
        carry: bool = True,
        alone: bool = False,
    ) -> list[Decision]:
        """Run `work` in one batch; on a failed commit forget what it touched, then raise.

        With `carry`, the claims of the committed decisions wait for the next
        pass; without, the caller runs them itself. `alone`: the batch holds
        one run's work (its completions and its decision), whose decision
        then takes no savepoint; if it fails, everything rolled back and the
        batch runs again with savepoints, so the completions commit without
        the failed decision, as in any batch (`JoinedWriteFailed`).
        """
        try:
            with self.store.write_together(savepoints=not alone) as txn:
                decisions = work(txn)
        except JoinedWriteFailed:
            for exec_id in exec_ids:
                self.cache.evict(exec_id)
            if not alone:
                raise
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

    # -- tasks ---------------------------------------------------------------------

    def _claim_ready(self, exec_id: str | None, now: Now) -> list[TaskRecord]:
        """Claim every ready task (of one run, or all) in one transaction.

        A claim locks its run's row on a shared store, so the claims go in
        run order: two workers claiming overlapping tasks, read in other
        orders, then wait for each other instead of deadlocking. The claimed
        tasks come back in their ready order.
        """
        ready = self.store.ready_tasks(exec_id, now())
        if not ready:
            return []
        at = now()
        got: dict[int, TaskRecord] = {}
        known = self.tasks.registry.activities
        with self.store.write_together() as txn:
            for task in sorted(ready, key=lambda t: t.exec_id):
                if task.activity_name not in known:
                    continue  # reported when the pass runs it (UnknownActivity)
                claimed = txn.claim_task(task.id, at)
                if claimed is not None:
                    got[task.id] = claimed
        unknown = [t for t in ready if t.activity_name not in known]
        return [got[t.id] for t in ready if t.id in got] + unknown

    async def _run_and_record(
        self,
        claimed: list[TaskRecord],
        now: Now,
        errors: list[HarvestError],
        *,
        carry: bool,
    ) -> dict[str, Decision]:
        """Run the bodies and record them as they finish, each run's next decision with its last.

        Runs go side by side (at most `group_commit_size` bodies at once),
        each run's tasks one after another in claim order, so its history
        does not depend on timing. Whatever finished by the time the loop
        looks is recorded in one transaction: a finished body never waits
        for a slow one, and a run's follow-up decision joins the commit of
        its last completion. Returns the follow-up decisions by run.

        When a commit fails (storage), the bodies still running are
        cancelled and every claim of `claimed` is released, so none stays
        RUNNING: a recorded task is no longer RUNNING, and the others run
        again on a later pass (at-least-once).
        """
        running: dict[asyncio.Future[Finished | None], str] = {}
        try:
            return await self._run_and_record_all(
                claimed, running, now, errors, carry=carry
            )
        except BaseException:
            for future in running:
                future.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            self._release(claimed)
            raise

    def _release(self, claimed: list[TaskRecord]) -> None:
        """Put these claims back to PENDING with the store's next write."""
        for task in claimed:
            self.store.release_claim(task.id)

    async def _run_and_record_all(
        self,
        claimed: list[TaskRecord],
        running: dict[asyncio.Future[Finished | None], str],
        now: Now,
        errors: list[HarvestError],
        *,
        carry: bool,
    ) -> dict[str, Decision]:
        decided: dict[str, Decision] = {}
        news: set[str] = set()
        exec_id = claimed[0].exec_id
        if all(task.exec_id == exec_id for task in claimed):
            # One run: its bodies in order, no tasks to schedule or wait on.
            for i, task in enumerate(claimed, 1):
                item = await self._execute(task, now, errors)
                last = [exec_id] if i == len(claimed) else []
                batch = [] if item is None else [item]
                for decision in await self._flush(
                    batch, last, news, now, errors, carry=carry
                ):
                    decided[decision.exec_id] = decision
            return decided
        queues: dict[str, collections.deque[TaskRecord]] = {}
        for task in claimed:
            queues.setdefault(task.exec_id, collections.deque()).append(task)
        order = {exec_id: i for i, exec_id in enumerate(queues)}
        waiting = collections.deque(queues)
        limit = max(1, self.settings.group_commit_size)
        # Bodies that finished in their first step (runtime/eager.py): no
        # task was made for them; they count against `limit` until flushed.
        early: list[tuple[str, Finished | None]] = []

        def start(exec_id: str) -> None:
            task = queues[exec_id].popleft()
            started = eager.start(self._execute(task, now, errors))
            if started.task is None:
                early.append((exec_id, started.value))
            else:
                running[started.task] = exec_id

        while waiting and len(running) + len(early) < limit:
            start(waiting.popleft())
        while running or early:
            if early:
                # The host loop still gets its turn once a round.
                await asyncio.sleep(0)
                done = {f for f in running if f.done()}
            else:
                done, _ = await asyncio.wait(
                    running, return_when=asyncio.FIRST_COMPLETED
                )
            ended = early[:] + [(running.pop(f), f.result()) for f in done]
            early.clear()
            ended.sort(key=lambda item: order[item[0]])
            finished = [item for _, item in ended if item is not None]
            last = [exec_id for exec_id, _ in ended if not queues[exec_id]]
            flushed = await self._flush(finished, last, news, now, errors, carry=carry)
            for decision in flushed:
                decided[decision.exec_id] = decision
            for exec_id, _ in ended:
                if queues[exec_id]:
                    start(exec_id)
            while waiting and len(running) + len(early) < limit:
                start(waiting.popleft())
        return decided

    async def _execute(
        self, task: TaskRecord, now: Now, errors: list[HarvestError]
    ) -> Finished | None:
        try:
            return await self.tasks.execute(task, now)
        except HarvestError as exc:
            errors.append(exc)
            return None

    async def _flush(
        self,
        finished: list[Finished],
        last: list[str],
        news: set[str],
        now: Now,
        errors: list[HarvestError],
        *,
        carry: bool,
    ) -> list[Decision]:
        """Record `finished` and decide the runs of `last` with news, few commits.

        `news` gathers the runs whose recorded outcome left something to
        decide; a run is decided once its last claimed task is recorded, in
        the transaction that records it.
        """
        by_run: dict[str, list[Finished]] = {}
        for item in finished:
            by_run.setdefault(item.task.exec_id, []).append(item)
        ended = set(last)
        # A run whose last body failed to start (no outcome) may still have
        # news from an earlier round: it is decided now.
        runs = list(by_run) + [r for r in last if r in news and r not in by_run]
        if not runs:
            return []

        def record(txn: WriteTxn, exec_id: str) -> list[Decision]:
            # Recording fails only with the storage: no savepoint of its own.
            for item in by_run.get(exec_id, []):
                if self.tasks.record(item, txn):
                    news.add(exec_id)
            if exec_id in ended and exec_id in news:
                news.discard(exec_id)
                return self._decide([exec_id], now, errors)
            return []

        def lock(txn: WriteTxn, batch: list[str]) -> set[str]:
            # All at once, in one order: a record batch waits for its rows.
            ids = [item.task.id for run in batch for item in by_run.get(run, [])]
            return txn.lock_runs(batch, task_ids=ids)

        return await self._in_batches(runs, record, carry=carry, lock=lock)

    # -- one run -------------------------------------------------------------------

    async def drive_step(
        self, exec_id: str, now: Now, decision: Decision
    ) -> tuple[bool, Decision | None]:
        """Run the run's claimed (or ready) tasks, recording the last with its next decision.

        Returns whether any task ran, and the follow-up decision (None when
        the tasks brought nothing to decide, a retry rescheduled, say).
        Errors of the bodies and of the decision are raised after the commit,
        as the one-transaction path raises them.
        """
        claimed = list(decision.claimed)
        try:
            claimed += self.take_carried(exec_id)
            if not claimed and not decision.idle:
                claimed = self._claim_ready(exec_id, now)  # claims nothing if it fails
        except BaseException:
            self._release(claimed)  # the decision's claims: PENDING again
            raise
        if not claimed:
            return False, None
        errors: list[HarvestError] = []
        # The new decision's claims are this caller's to run, not the pass's.
        decided = await self._run_and_record(claimed, now, errors, carry=False)
        if errors:
            raise errors[0]
        return True, decided.get(exec_id)

    def decide_alone(
        self, exec_id: str, at: datetime, *, retry_panic_now: bool = False
    ) -> Decision:
        """One decision in its own commit, claiming the tasks it schedules.

        A plain write transaction: with no other run to share the commit, a
        savepoint around the decision would only repeat its rollback.
        """
        decision = self.decider.decide(
            exec_id, at, claim=True, retry_panic_now=retry_panic_now
        )
        self._commits += 1
        if decision.progressed:
            self._decided_at[exec_id] = self._commits
        return decision
