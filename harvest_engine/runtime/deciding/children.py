"""Child workflows and commands between runs: starts, signals, hard cancels, awaits, close policies.

Each command takes effect in the caller's decision transaction:
one file holds every run, so there is no outbox. An await of a RUNNING (or
ENQUEUED) target stays open and each later cycle of the waiter checks it
again. A parent waiting on its child keeps no decision flag: the child's
seal flags it (`seal_run`). A waiter on another run (`await_external_workflow`)
links itself to that run (`WriteTxn.watch_runs`), whose seal flags it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import HarvestError
from harvest_engine.events import IMPOSED
from harvest_engine.runtime.deciding import child_start, enqueue, headers
from harvest_engine.runtime.deciding.attempt_cancels import cancel_attempts
from harvest_engine.runtime.deciding.drive_time import real_time
from harvest_engine.runtime.deciding.runs import append, start_run
from harvest_engine.states import ErrorInfo
from harvest_engine.store.rows import ExecutionRecord, NewExecution
from harvest_engine.workflow.child_options import recorded_flow

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.runtime.deciding.run_ends import RunEnds
    from harvest_engine.runtime.registry import Registry
    from harvest_engine.store.txn_protocol import WriteTxn
    from harvest_engine.workflow.instance import WorkflowInstance

# A cascade that reached the run whose own command caused it: (state, reason).
Halt = tuple[str, str]

PARENT_CLOSED_CANCEL = "parent closed"
# The TERMINATE policy fails the child (guide §9) with this error type.
PARENT_CLOSED_TERMINATE = "ParentClosed"
PARENT_CLOSED_FAILED = "parent closed (parent-close policy TERMINATE)"
_CHAIN_LIMIT = 10_000


class EffectFailed(BaseException):
    """An effect raised a runtime error (e.g. UnknownWorkflow): the whole cycle rolls back.

    A `BaseException`, so the decision's panic accounting does not mistake
    it for a bug in the workflow code.
    """

    def __init__(self, error: HarvestError) -> None:
        super().__init__(str(error))
        self.error = error


# -- sealing with the parent-close cascade ----------------------------------------


def seal_run(
    txn: WriteTxn,
    exec_id: str,
    state: str,
    now: datetime,
    ends: RunEnds,
    *,
    output: str | None = None,
    error: str | None = None,
    skip: str | None = None,
    parent: str | bool | None = True,
) -> Halt | None:
    """Seal a run, wake its waiting parent, then give each RUNNING detached child its parent-close policy.

    `parent` is the run's parent exec id when the caller knows it (None: it
    has none); True reads it. The parent, if RUNNING, is flagged for a
    decision: it may be waiting on this run's result.

    The one place a run's state becomes terminal: `ends` evicts it and
    tells the `run_closed` hooks after the commit. Returns the (state,
    reason) the cascade would give `skip` (the run whose own command is
    being applied), which the caller seals itself.
    """
    if parent is True:
        row = txn.execution(exec_id)
        parent = None if row is None else row.parent_exec_id
    closed_at = real_time(now)
    txn.seal(exec_id, state, closed_at=closed_at, output=output, error=error)
    ends.sealed(txn, exec_id, state, closed_at)
    if parent and parent != skip:  # an exec id: `parent is True` was read above
        wake_parent(txn, parent)
    return close_children(txn, exec_id, now, ends, skip=skip)


def wake_parent(txn: WriteTxn, parent: str) -> None:
    """Flag a RUNNING parent for a decision: a child of it ended."""
    row = txn.execution(parent)
    if row is not None and row.state == "RUNNING":
        txn.update_execution(parent, needs_decision=1)


def close_children(
    txn: WriteTxn, parent: str, now: datetime, ends: RunEnds, *, skip: str | None = None
) -> Halt | None:
    """Apply the parent-close policy of every live child of `parent` (ENQUEUED too), level by level."""
    halt: Halt | None = None
    for child in txn.running_children(parent):
        if child.parent_close_policy == "request_cancel":
            ending = ("CANCELLED", PARENT_CLOSED_CANCEL)
        elif child.parent_close_policy == "terminate":
            ending = ("FAILED", PARENT_CLOSED_FAILED)
        else:
            continue  # abandon, or an attached child: left running (guide §9)
        if child.exec_id == skip:
            halt = halt or ending
            continue
        halt = (
            hard_seal(txn, child.exec_id, ending[0], ending[1], now, ends, skip=skip)
            or halt
        )
    return halt


def hard_seal(
    txn: WriteTxn,
    exec_id: str,
    state: str,
    reason: str,
    now: datetime,
    ends: RunEnds,
    *,
    skip: str | None = None,
) -> Halt | None:
    """End a RUNNING run at once: WorkflowCancelled {reason}, sealed CANCELLED or TERMINATED.

    FAILED is the parent-close TERMINATE policy: WorkflowFailed with a
    `ParentClosed` error instead. Its running activity bodies are cancelled.
    """
    cancel_attempts(txn, exec_id, f"the run ended {state}: {reason}")
    txn.flow().drop_wait(exec_id)  # an ENQUEUED child leaves its queue, a slot frees
    error = ending_error(state, reason)
    if state == "FAILED":
        append(txn, exec_id, "WorkflowFailed", {"error": payloads.loads(error)}, now)
    else:
        attrs = {"reason": reason, IMPOSED: True}
        append(txn, exec_id, "WorkflowCancelled", attrs, now)
    return seal_run(txn, exec_id, state, now, ends, error=error, skip=skip)


def ending_error(state: str, reason: str) -> str:
    """The stored error of a cancelled or terminated run (its reason as the message)."""
    kind = {"CANCELLED": "Cancelled", "FAILED": PARENT_CLOSED_TERMINATE}.get(
        state, "Terminated"
    )
    return payloads.dumps(
        ErrorInfo(type=kind, message=reason, non_retryable=True).to_json()
    )


# -- effects of commands, inside the caller's transaction --------------------------


class Effects:
    """Applies a live cycle's effect commands (see `commands.EFFECT_COMMANDS`) in its transaction."""

    def __init__(
        self,
        txn: WriteTxn,
        row: ExecutionRecord,
        now: datetime,
        registry: Registry,
        ends: RunEnds,
        instance: WorkflowInstance,
    ) -> None:
        self.txn = txn
        self.row = row
        self.now = now
        self.registry = registry
        self.ends = ends
        self.instance = instance

    def __call__(self, type_: str, attrs: dict[str, Any]) -> dict[str, Any] | None:
        """Apply one effect command in the decision's transaction, so both commit or neither.

        Returns:
            Extra attrs to record on the command's event (a signal's or cancel's outcome), or None.

        Raises:
            EffectFailed: a HarvestError from the effect; the cycle rolls back.
        """
        try:
            if type_ == "ChildWorkflowStarted":
                return self._start_child(attrs)
            elif type_ == "ExternalSignalSent":
                return self._signal(attrs)
            elif type_ == "ExternalCancelRequested":
                return self._cancel(attrs)
            elif type_ == "MutexRequested":
                self.txn.enqueue_mutex(str(attrs["key"]), self.row.exec_id, self.now)
            elif type_ == "MutexReleased":
                self.txn.release_mutex(str(attrs["key"]), self.row.exec_id)
        except HarvestError as exc:
            raise EffectFailed(exc) from exc
        return None

    def _start_child(self, attrs: dict[str, Any]) -> dict[str, Any] | None:
        name = str(attrs["workflow_name"])
        info = self.registry.workflow(name)  # UnknownWorkflow rolls the cycle back (§9)
        child = str(attrs["child"])
        if self.txn.execution(child) is not None:
            return None
        options = child_start.options(attrs, info, self.now)
        holder = child_start.holder(self.txn, name, options.workflow_id)
        if holder is not None:
            return child_start.refusal(options.workflow_id, holder)
        queue, refused = child_start.admissible(
            self.registry, self.txn, name, attrs, self.now
        )
        if refused is not None:
            return refused
        new = NewExecution(
            exec_id=child,
            workflow_name=name,
            workflow_id=options.workflow_id or child,
            input=payloads.dumps(attrs.get("input")),
            parent_exec_id=self.row.exec_id,
            parent_close_policy=attrs.get("parent_close_policy"),
            deadline=options.deadline,
            retry_policy=options.retry_policy,
        )
        start_run(
            self.txn,
            new,
            self.now,
            # A child follows the advice its parent started with.
            advice_at=self.instance.advice_at,
            advice_bytes=self.instance.advice_bytes,
        )
        if queue is not None:
            flow = recorded_flow(attrs)
            enqueue.enqueue(
                self.registry, self.txn, new, queue, flow, self.now, keep_deadline=True
            )
        return None

    def _signal(self, attrs: dict[str, Any]) -> dict[str, Any]:
        target = self.txn.execution(str(attrs["target"]))
        refused = _refusal(target, str(attrs["target"]))
        if refused is not None or target is None:
            return refused or {}
        self.txn.stage_signal(
            target.exec_id,
            str(attrs["name"]),
            payloads.dumps(attrs.get("payload")),
            None,
            self.now,
            headers.signal_text(),  # the decision's context
        )
        return {}

    def _cancel(self, attrs: dict[str, Any]) -> dict[str, Any]:
        target_id = str(attrs["target"])
        target = self.txn.execution(target_id)
        refused = _refusal(target, target_id)
        if refused is not None:
            return refused
        reason = f"cancelled by run {self.row.exec_id}"
        me = self.row.exec_id
        if target_id == me:
            self.instance.halted = ("CANCELLED", reason)
            return {}
        halt = hard_seal(
            self.txn, target_id, "CANCELLED", reason, self.now, self.ends, skip=me
        )
        if halt is not None:
            self.instance.halted = halt
        return {}


def _refusal(target: ExecutionRecord | None, target_id: str) -> dict[str, Any] | None:
    if target is None:
        return {"error": _error("target_unknown", f"no run with id {target_id}")}
    if target.state == "TERMINATED":
        return {"error": _error("target_terminated", f"run {target_id} was terminated")}
    if target.state != "RUNNING":
        return {
            "error": _error("target_not_running", f"run {target_id} is {target.state}")
        }
    return None


def _error(type_: str, message: str) -> dict[str, Any]:
    return ErrorInfo(type=type_, message=message, non_retryable=True).to_json()


# -- awaited runs --------------------------------------------------------------------


def last_run(txn: WriteTxn, exec_id: str) -> ExecutionRecord | None:
    """The run at the end of a continue-as-new (or retry) chain starting at `exec_id`."""
    row = txn.execution(exec_id)
    for _ in range(_CHAIN_LIMIT):
        if (
            row is None
            or row.successor is None
            or row.state not in ("CONTINUED_AS_NEW", "FAILED")
        ):
            return row
        row = txn.execution(row.successor)
    return row


def result_event(
    txn: WriteTxn, kind: str, command_id: int, target: str
) -> tuple[str, dict[str, Any]] | None:
    """The event that answers a wait on `target` now, or None while it runs.

    `kind` is "child" (ChildWorkflowCompleted / ChildWorkflowFailed) or
    "await" (ExternalWorkflowCompleted / ExternalWorkflowFailed).
    """
    prefix = "ChildWorkflow" if kind == "child" else "ExternalWorkflow"
    row = last_run(txn, target)
    base: dict[str, Any] = {"command_id": command_id, "target": target}
    if row is None:
        return f"{prefix}Failed", {
            **base,
            "error": _error("target_unknown", f"no run with id {target}"),
        }
    if row.state in ("RUNNING", "ENQUEUED"):
        return None  # ENQUEUED: waits for its queue's admission
    base["run"] = row.exec_id
    if row.state == "COMPLETED":
        return f"{prefix}Completed", {
            **base,
            "result": payloads.loads(row.output) if row.output else None,
        }
    stored = ErrorInfo.from_json(payloads.loads(row.error)) if row.error else None
    reason = stored.message if stored is not None else ""
    if row.state == "CANCELLED":
        if kind == "child":
            error = _error(
                "ChildWorkflowCancelled", f"child workflow cancelled: {reason}"
            )
        else:
            error = _error("target_cancelled", f"workflow cancelled: {reason}")
    elif row.state == "TERMINATED" or row.state == "CONTINUED_AS_NEW":
        if kind == "child":
            error = _error(
                "ChildWorkflowTerminated", f"child workflow terminated: {reason}"
            )
        else:
            error = _error(
                "target_terminated", f"run {row.exec_id} was terminated: {reason}"
            )
    else:
        info = stored or ErrorInfo(type="Error", message=row.state.lower())
        error = info.to_json()
    return f"{prefix}Failed", {**base, "error": error}


def waited_run(txn: WriteTxn, target: str) -> str:
    """The run a waiter waits on directly (the end of the target's chain)."""
    row = last_run(txn, target)
    return target if row is None else row.exec_id


__all__ = [
    "EffectFailed",
    "Effects",
    "close_children",
    "hard_seal",
    "result_event",
    "seal_run",
]
