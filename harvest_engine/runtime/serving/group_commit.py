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

This module holds the pass and the one-run drive; the batching under them
is `commit_batches`, the running and recording of bodies `bodies`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.runtime.serving.bodies import BodyRounds

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.errors import HarvestError
    from harvest_engine.runtime.deciding.cycle import Decision
    from harvest_engine.runtime.serving.commit_batches import Now
    from harvest_engine.store.rows import TaskRecord
    from harvest_engine.store.txn_protocol import WriteTxn


DECISION_LOCKS = 16
"""Runs a decision batch locks per statement (a shared store's round trip)."""


class GroupCommit(BodyRounds):
    """Drives the fleet with few commits; owns the claims carried between passes."""

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
    def carried_ids(self) -> list[int]:
        """The carried claims' task ids, as `take_carried(None)` checks them."""
        return [t.id for t in self._carried]

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
            exec_ids,
            decide,
            carry=True,
            lock=lock,
            chunk=DECISION_LOCKS,
            after=self._successors(now, errors),
        )
        return any(d.progressed for d in decisions)

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
