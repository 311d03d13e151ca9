"""One decision cycle of one run, in one write transaction.

Take the write lock, check the deadline, replay (or feed the cached instance)
the stored history, append staged signals and fired timers, let the code
emit its commands, validate them, append events and projections, seal if
terminal, commit. Either all of it lands or none of it does.

This module holds the cycle itself; `Decider` takes where the cycle leaves
the run from `outcomes`, the writing from `projections` and what follows a
rolled-back cycle from `after_rollback`, each a module of its own.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import (
    ExecutionNotFound,
    HarvestError,
    HarvestInternalError,
    NonDeterminismDetected,
)
from harvest_engine.runtime.deciding import (
    cancel,
    children,
    drive_time,
    intercepted,
    mutex,
)
from harvest_engine.runtime.deciding.cycle import Cycle, Decision, Panic
from harvest_engine.runtime.deciding.outcomes import Outcomes, terminal_state
from harvest_engine.runtime.deciding.run_ends import deciding
from harvest_engine.runtime.deciding.runs import run_info
from harvest_engine.runtime.settings import HistoryCapReached
from harvest_engine.states import RunState
from harvest_engine.store.txn_protocol import RunBusy, WriteTxn
from harvest_engine.workflow.commands import CommandRejected
from harvest_engine.workflow.instance import WorkflowInstance

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.store.rows import ExecutionRecord

log = logging.getLogger("harvest_engine.runtime")


FIRST_DRIVE_SEQ = 2
"""The next seq of a run whose history is WorkflowStarted alone: its first drive.

Such a run is always replayed afresh (one event) instead of taken from the
cache, so signals staged before it go in before the body begins whether or
not an earlier drive ran the body to a park that recorded nothing.
"""


class Decider(Outcomes):
    """Runs decision cycles for the runtime (`Outcomes` holds its parts)."""

    def decide(
        self,
        exec_id: str,
        now: datetime,
        *,
        claim: bool = False,
        retry_panic_now: bool = False,
    ) -> Decision:
        """One cycle; raises (and rolls back) on divergence, unknown names and panics.

        With `claim`, the activity tasks the cycle schedules are claimed
        (RUNNING) in the same transaction and listed in `Decision.claimed`,
        which saves a claim commit per activity; the caller must run them.
        A run that panicked waits out its backoff (`panics.backoff`) unless
        `retry_panic_now` (`run_until_blocked` on that run: a person asked).
        """
        try:
            with self.store.write() as txn:
                return self._cycle(txn, exec_id, now, claim, retry_panic_now)
        except RunBusy as busy:
            # Another worker holds a run this cycle needs: stand back (the
            # cycle rolled back) and decide it again on a later pass.
            log.debug(
                "decision of %s stood back: run %s is held elsewhere", exec_id, busy
            )
            self.cache.evict(exec_id)
            return Decision(exec_id)
        except children.EffectFailed as failed:
            self.cache.evict(exec_id)
            return self.after_rollback.after_error(exec_id, failed.error, now)
        except CommandRejected as rejected:
            self.cache.evict(exec_id)
            return self.after_rollback.reject(exec_id, rejected, now)
        except Panic as panic:
            self.cache.evict(exec_id)
            return self.after_rollback.count_panic(exec_id, panic.error, now)
        except HistoryCapReached as cap:
            self.cache.evict(exec_id)
            return self.after_rollback.cancel_instead(
                exec_id, now
            ) or self.after_rollback.seal_at_cap(exec_id, cap.reason, now)
        except cancel.CleanupBudgetReached as budget:
            self.cache.evict(exec_id)
            ended = self.after_rollback.cancel_instead(exec_id, now)
            if ended is None:
                raise HarvestInternalError(
                    f"cleanup budget of a run with no cancel: {exec_id}"
                ) from budget
            return ended
        except HarvestError as exc:
            self.cache.evict(exec_id)
            return self.after_rollback.after_error(exec_id, exc, now)
        except BaseException:
            self.cache.evict(exec_id)
            raise

    # -- the cycle ---------------------------------------------------------------

    def _cycle(
        self,
        txn: WriteTxn,
        exec_id: str,
        now: datetime,
        claim: bool = False,
        retry_panic_now: bool = False,
    ) -> Decision:
        if not txn.lock_for_decision(exec_id):
            return Decision(exec_id)  # another worker is deciding it right now
        row = txn.execution(exec_id)
        if row is None:  # run_until_blocked reads no row before its decision
            raise ExecutionNotFound(exec_id=exec_id)
        if row.state == "ENQUEUED":
            # Waits for its queue (runtime/flow/): nothing to decide until admitted.
            txn.update_execution(exec_id, needs_decision=0)
            return Decision(exec_id, waiting_timer=True)
        if row.state != "RUNNING":
            self.cache.evict(exec_id)
            return Decision(exec_id, state=terminal_state(row))
        if row.pause_reason is not None:
            # Paused (runtime/repairing/pausing.py): what arrived waits for the unpause.
            return Decision(exec_id, state=RunState.InProgress())
        # A pending cancel skips a retry's backoff, as it skips a local
        # activity's (guide §7): every cancel ends the run, and a long backoff
        # must not keep a cancelled run RUNNING until it passes.
        if (
            row.not_before is not None
            and now < row.not_before
            and row.cancel_reason is None
            and not (row.panic_count > 0 and (retry_panic_now or _past(row, now)))
        ):
            return Decision(exec_id, waiting_timer=True)
        if row.deadline is not None and now >= row.deadline:
            return self._time_out(txn, row, now)
        interceptors = self.registry.interceptors
        if interceptors.decision:
            first = row.next_seq == FIRST_DRIVE_SEQ
            return intercepted.decide(
                interceptors.decision,
                txn,
                row,
                first,
                self.registry.header_memory,
                lambda: self._run(txn, row, now, claim),
            )
        if interceptors.run_closed:
            with deciding(exec_id):  # a seal of this run in it is `decided`
                return self._run(txn, row, now, claim)
        return self._run(txn, row, now, claim)

    def _run(
        self, txn: WriteTxn, row: ExecutionRecord, now: datetime, claim: bool
    ) -> Decision:
        """The cycle of a RUNNING run whose decision is due: replay, run, record."""
        exec_id = row.exec_id
        info = self.registry.workflow(row.workflow_name)
        instance = self._instance(row, info)
        cycle = Cycle(txn, row, now, row.next_seq, claimed=[] if claim else None)
        instance.effects = children.Effects(
            txn, row, now, self.registry, self.ends, instance
        )
        instance.drive_now = drive_time.plain(now)
        try:
            stored = list(txn.load_events(exec_id, instance.applied_seq))
            instance.expect(stored)
            for event in stored:
                instance.feed(event)
            first_drive = instance.start_pending and cycle.next_seq == FIRST_DRIVE_SEQ
            if first_drive:
                self._deliver_inputs(cycle, instance, before_start=True)
            instance.begin()
            cycle.take(instance.flush(cycle.next_seq, now))
            if instance.halted is None:
                # One signal read a cycle: the first drive's came before the body.
                self._deliver_inputs(cycle, instance, signals=not first_drive)
            if instance.halted is None:
                self._settle_waits(cycle, instance)
        except (NonDeterminismDetected, HarvestInternalError, RunBusy):
            raise
        except self.store.storage_errors:
            raise  # the storage failed, not the workflow: no panic is counted
        except Exception as exc:
            # Workflow code raised outside the body's task: a signal handler,
            # a condition predicate, an update validator. A bug, like a panic.
            raise Panic(exc) from exc
        finally:
            instance.effects = None
            instance.drive_now = None
        if instance.violation is not None:
            raise Panic(instance.violation)
        if instance.rejection is not None:
            raise instance.rejection
        if instance.halted is not None:
            decision = self._halt(cycle, instance)
        elif row.cancel_reason is not None:
            decision = self._cancelled(cycle, instance)
        elif instance.done:
            decision = self._finish(cycle, instance)
        else:
            decision = self._park(cycle, instance)
        decision.inputs_left = cycle.inputs_left and not decision.terminal
        if not cycle.recorded:
            self.projections.record(cycle, instance, decision)
        if decision.terminal:
            instance.close()
        else:
            self.cache.put(exec_id, instance)
        decision.events = cycle.events
        decision.claimed = cycle.claimed or []
        decision.progressed = bool(cycle.events) or decision.terminal
        decision.idle = (
            decision.state is None
            and not decision.claimed
            and txn.holds_no_work(exec_id)
        )
        return decision

    def _instance(self, row: ExecutionRecord, info: Any) -> WorkflowInstance:
        cached = self.cache.take(row.exec_id)
        # A cancel request evicts: the body sees it from the start of a replay.
        if (
            cached is not None
            and cached.applied_seq < row.next_seq
            and row.next_seq > FIRST_DRIVE_SEQ
            and cached.fn is info.fn
            and cached.cancel_reason == row.cancel_reason
        ):
            return cached
        if cached is not None:
            cached.close()
        fresh = WorkflowInstance(
            info.fn,
            run_info(row),
            input_type=info.input_type,
            cancel_reason=row.cancel_reason,
        )
        if cached is not None and cached.started is not None:
            # The WorkflowStarted the dropped instance applied (a run at its
            # first drive again, its park having recorded nothing): recorded
            # events never change, so it is not read again.
            fresh.feed(cached.started)
        return fresh

    def _deliver_inputs(
        self,
        cycle: Cycle,
        instance: WorkflowInstance,
        *,
        before_start: bool = False,
        signals: bool = True,
    ) -> None:
        """Staged signals and due timers, merged by arrival time, each followed by a flush.

        With `before_start` (a run's first drive) the body has not begun: the
        signals go into its buffer, marked so replay buffers them first too.
        Without `signals`, only timers are read.
        """
        txn, exec_id = cycle.txn, cycle.row.exec_id
        # The history caps bound the ingest (guide §8): the event cap by
        # count, the byte cap by the payload bytes left under it.
        room = self.settings.signal_room(cycle.next_seq)
        byte_room = self.settings.signal_byte_room(cycle.row)
        staged = txn.staged_signals(exec_id, room, byte_room) if signals else []
        signal_bytes = 0
        timers = [] if before_start else list(txn.due_timers(exec_id, cycle.now))
        if not staged and not timers:
            return  # the usual cycle: nothing arrived
        inputs: list[tuple[datetime, int, Any]] = [
            (s.received_at, 1, s) for s in staged
        ] + [(t.fire_at, 0, t) for t in timers]
        inputs.sort(key=lambda item: (item[0], item[1]))
        delivered: list[int] = []
        fired: list[str] = []
        for index, (_, kind, item) in enumerate(inputs):
            # A signal followed by another goes in with it: the code runs once
            # every staged signal is in (guide §8), live and on replay.
            with_next = (
                kind == 1
                and not before_start
                and index + 1 < len(inputs)
                and inputs[index + 1][1] == 1
            )
            if kind == 1:
                attrs = {"name": item.name, "payload": item.payload.value}
                if before_start:
                    attrs["before_start"] = True
                elif with_next:
                    attrs["with_next"] = True
                event = cycle.event("SignalReceived", attrs)
                delivered.append(item.signal_id)
                signal_bytes += len(payloads.dumps(event.attrs))
            else:
                if _cancelled_in(cycle, item.timer_id):
                    # Read as due before this drive cancelled it (a handler's
                    # reset, say): the row is dropped with the cancel, and a
                    # timer started again under its id must not take its fire.
                    continue
                event = cycle.event("TimerFired", {"timer_id": item.timer_id})
                fired.append(item.timer_id)
            instance.deliver(event)
            if not before_start and not with_next:
                cycle.take(instance.flush(cycle.next_seq, cycle.now))
            if instance.halted is not None:
                break
        if byte_room is not None and delivered and signal_bytes >= byte_room:
            # The history now holds the byte cap's worth: a signal still
            # staged fails the run at the cap on the next cycle, so the
            # drive goes on instead of parking the run over its cap.
            cycle.inputs_left = True
        if delivered:
            txn.mark_signals_delivered(exec_id, delivered)
        if fired:
            txn.delete_timers(exec_id, fired)

    def _settle_waits(self, cycle: Cycle, instance: WorkflowInstance) -> None:
        """Grant free mutexes and answer awaited runs that ended, until nothing changes."""
        txn, exec_id = cycle.txn, cycle.row.exec_id
        while instance.halted is None:
            answer: tuple[str, dict[str, Any]] | None = None
            granted = mutex.grant_next(txn, exec_id, instance)
            if granted is not None:
                answer = ("MutexGranted", {"key": granted[0], "lock_seq": granted[1]})
            else:
                for kind, command_id, target in instance.waiting_workflows():
                    answer = children.result_event(txn, kind, command_id, target)
                    if answer is not None:
                        break
            if answer is None:
                return
            instance.deliver(cycle.event(*answer))
            cycle.take(instance.flush(cycle.next_seq, cycle.now))


def _past(row: ExecutionRecord, now: datetime) -> bool:
    """Whether the run's execution deadline has passed (it times out, backoff or not)."""
    return row.deadline is not None and now >= row.deadline


def _cancelled_in(cycle: Cycle, timer_id: str) -> bool:
    """Whether this cycle recorded TimerCancelled for `timer_id`."""
    return any(
        e.type == "TimerCancelled" and e.attrs.get("timer_id") == timer_id
        for e in cycle.events
    )


__all__ = ["Decider"]
