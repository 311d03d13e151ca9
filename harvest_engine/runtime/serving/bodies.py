"""Activity bodies in a pass: claimed together, run side by side, recorded as they finish.

Each run's follow-up decision joins the commit of its last completion, and
a failed commit releases every claim so none stays RUNNING (`group_commit`
puts it in the pass).
"""

from __future__ import annotations

import asyncio
import collections
from typing import TYPE_CHECKING, cast

from harvest_engine.errors import HarvestError
from harvest_engine.runtime.serving import eager, plain_bodies
from harvest_engine.runtime.serving.body_ends import BodyEnds
from harvest_engine.runtime.serving.commit_batches import CommitBatches

if TYPE_CHECKING:
    from harvest_engine.runtime.deciding.cycle import Decision
    from harvest_engine.runtime.serving.commit_batches import Now
    from harvest_engine.runtime.serving.tasks import Finished
    from harvest_engine.store.rows import TaskRecord
    from harvest_engine.store.txn_protocol import WriteTxn


class BodyRounds(CommitBatches):
    """`GroupCommit`'s part that claims, runs and records activity bodies."""

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
        # Bodies that finished in their first step (runtime/serving/eager.py): no
        # task was made for them; they count against `limit` until flushed.
        early: list[tuple[str, Finished | None]] = []
        ends = BodyEnds(asyncio.get_running_loop())

        def start(exec_id: str) -> None:
            task = queues[exec_id].popleft()
            try:  # a plain body: a thread and a callback, no task (plain_bodies.py)
                plain = plain_bodies.start(self.tasks, task, now, ends)
            except HarvestError as exc:
                errors.append(exc)
                early.append((exec_id, None))
                return
            if plain is not None:
                if plain.done() and not plain.cancelled() and not plain.exception():
                    early.append((exec_id, plain.result()))
                else:
                    running[cast("asyncio.Future[Finished | None]", plain)] = exec_id
                return
            started = eager.start(self._execute(task, now, errors))
            if started.task is None:
                early.append((exec_id, started.value))
            else:
                started.task.add_done_callback(ends)
                running[started.task] = exec_id

        while waiting and len(running) + len(early) < limit:
            start(waiting.popleft())
        while running or early:
            if early:
                # The host loop still gets its turn once a round.
                await asyncio.sleep(0)
                done = {f for f in running if f.done()}
            else:
                done = await ends.first(running, self.settings.record_window_seconds)
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
            plain = plain_bodies.start(self.tasks, task, now)
            if plain is not None:
                return await plain
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

        # Only claims carried to the next pass may come with successors: a
        # caller driving one run runs its own claims, not other runs'.
        after = self._successors(now, errors) if carry else None
        return await self._in_batches(runs, record, carry=carry, lock=lock, after=after)
