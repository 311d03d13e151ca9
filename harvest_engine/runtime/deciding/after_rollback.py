"""What a decision does after its cycle rolled back.

A cycle that raised left nothing behind; its run may still have to end.
Each path opens a write transaction of its own: a pending cancel seals the
run CANCELLED, a history cap or a rejected command seals it FAILED, and a
panic is counted towards the budget (`panics`) or seals it FAILED there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import (
    HarvestError,
    HarvestInternalError,
    Unsupported,
    WorkflowPanicked,
)
from harvest_engine.events import HistoryEvent
from harvest_engine.runtime.deciding import cancel, children, panics
from harvest_engine.runtime.deciding.cycle import Decision
from harvest_engine.runtime.deciding.panics import PANIC_BUDGET
from harvest_engine.states import ErrorInfo, RunState
from harvest_engine.tracebacks import log_failed_run, stack_trace

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.runtime.deciding.run_ends import RunEnds
    from harvest_engine.runtime.registry import Registry
    from harvest_engine.runtime.settings import Settings
    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.store.txn_protocol import WriteTxn
    from harvest_engine.workflow.commands import CommandRejected


class AfterRollback:
    """Ends or backs off a run after a rolled-back cycle (the `Decider` holds one)."""

    def __init__(
        self,
        store: DurableStore,
        registry: Registry,
        ends: RunEnds,
        settings: Settings,
    ) -> None:
        self.store = store
        self.registry = registry
        self.ends = ends
        self.settings = settings

    def after_error(self, exec_id: str, error: HarvestError, now: datetime) -> Decision:
        """A rolled-back cycle's error: a cancelled run ends CANCELLED on a repeating one."""
        if cancel.ends_on_error(error):
            ended = self.cancel_instead(exec_id, now)
            if ended is not None:
                return ended
        raise error

    def cancel_instead(self, exec_id: str, now: datetime) -> Decision | None:
        """Seal a run with a pending cancel CANCELLED after its cycle rolled back."""
        reason = cancel.seal_cancelled_after(
            self.store, exec_id, now, self.registry, self.settings, self.ends
        )
        if reason is None:
            return None
        return Decision(
            exec_id, progressed=True, state=RunState.Cancelled(reason=reason)
        )

    def seal_at_cap(
        self, exec_id: str, reason: dict[str, Any], now: datetime
    ) -> Decision:
        """The rolled-back decision reached a cap: fail the run with the typed reason."""
        info = ErrorInfo(
            type="HistoryCapReached",
            message=payloads.dumps(reason),
            non_retryable=True,
            details=reason,
        )
        with self.store.write() as txn:
            if txn.execution(exec_id) is None:
                raise HarvestInternalError(f"cap seal of a run that is gone: {exec_id}")
            return self._seal_failed(txn, exec_id, info, now)

    def _seal_failed(
        self, txn: WriteTxn, exec_id: str, info: ErrorInfo, now: datetime
    ) -> Decision:
        """End a run FAILED with a WorkflowFailed event after its cycle rolled back."""
        row = txn.execution(exec_id)
        if row is None:
            raise HarvestInternalError(f"failure seal of a run that is gone: {exec_id}")
        event = HistoryEvent(
            seq=row.next_seq,
            type="WorkflowFailed",
            at=now,
            attrs={"error": info.to_json()},
        )
        txn.append_events(exec_id, [event])
        children.seal_run(
            txn,
            exec_id,
            "FAILED",
            now,
            self.ends,
            error=payloads.dumps(info.to_json()),
        )
        log_failed_run(
            exec_id=exec_id,
            workflow_id=row.workflow_id,
            workflow_name=row.workflow_name,
            error=info,
        )
        return Decision(exec_id, progressed=True, state=RunState.Failed(error=info))

    def reject(
        self, exec_id: str, rejected: CommandRejected, now: datetime
    ) -> Decision:
        """A rejected command: the cycle rolled back; seal FAILED, then raise Unsupported."""
        info = ErrorInfo(
            type="Unsupported",
            message=f"{rejected.feature} — {rejected.why}",
            non_retryable=True,
            details={"feature": rejected.feature},
        )
        with self.store.write() as txn:
            row = txn.execution(exec_id)
            if row is None or row.state != "RUNNING":
                raise HarvestInternalError(
                    f"rejection seal of a run that is gone: {exec_id}"
                )
            self._seal_failed(txn, exec_id, info, now)
        raise Unsupported(feature=rejected.feature, why=rejected.why)

    # -- panics ------------------------------------------------------------------------

    def count_panic(
        self, exec_id: str, error: BaseException, now: datetime
    ) -> Decision:
        """A bug in the code: the cycle rolled back; count it, seal FAILED at the budget."""
        with self.store.write() as txn:
            row = txn.execution(exec_id)
            if row is None or row.state != "RUNNING":
                raise HarvestInternalError(
                    f"panic bookkeeping for a run that is gone: {exec_id}"
                )
            count = row.panic_count + 1
            details = panics.details(error)
            where = panics.where(details)
            if count < PANIC_BUDGET:
                # Durable: a pass (poll_once, run_until_idle, serve) leaves the
                # run alone until then, so the budget counts attempts a person
                # can react to; run_until_blocked on it retries at once.
                retry_at = panics.retry_at(count, now)
                txn.update_execution(
                    exec_id, panic_count=count, not_before=retry_at, needs_decision=1
                )
            else:
                info = ErrorInfo(
                    type="Panic",
                    message=f"workflow code raised {type(error).__name__}: {error}"
                    f"{where} ({count} cycles in a row)",
                    non_retryable=True,
                    details=details,
                    stack_trace=stack_trace(error),
                )
                return self._seal_failed(txn, exec_id, info, now)
        raise WorkflowPanicked(
            exec_id=exec_id,
            error=f"{type(error).__name__}: {error}{where}",
            count=count,
            budget=PANIC_BUDGET,
            details=details,
            retry_at=retry_at,
        ) from error
