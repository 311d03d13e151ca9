"""What a recorded child start asks for: its workflow id, deadline and retry, and whether the id is free."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import (
    DuplicateEnqueue,
    HarvestError,
    InvalidFlowOption,
    QuotaExceeded,
    UnknownQueue,
)
from harvest_engine.runtime.deciding import enqueue
from harvest_engine.workflow.child_options import REFUSED, recorded_flow

if TYPE_CHECKING:
    from harvest_engine.authoring import WorkflowInfo
    from harvest_engine.runtime.registry import Registry
    from harvest_engine.store.txn_protocol import WriteTxn

# What a queue may refuse a child start with; the parent sees a ChildWorkflowError
# of that type (a quota's retryable: it frees up with time).
_QUEUE_REFUSALS = (UnknownQueue, DuplicateEnqueue, QuotaExceeded, InvalidFlowOption)


@dataclass(frozen=True)
class ChildStart:
    """The options of one child start, the recorded ones winning over the @workflow ones."""

    workflow_id: str | None
    deadline: datetime | None
    retry_policy: str | None


def options(attrs: dict[str, Any], info: WorkflowInfo, now: datetime) -> ChildStart:
    """The child's options from its ChildWorkflowStarted attrs and its @workflow declaration."""
    seconds = attrs.get("execution_timeout")
    if isinstance(seconds, (int, float)):
        timeout: timedelta | None = timedelta(seconds=float(seconds))
    else:
        timeout = info.execution_timeout
    retry = attrs.get("retry")
    if retry is None and info.retry is not None:
        retry = info.retry.to_json()
    workflow_id = attrs.get("workflow_id")
    return ChildStart(
        workflow_id=workflow_id if isinstance(workflow_id, str) else None,
        deadline=None if timeout is None else now + timeout,
        retry_policy=None if retry is None else payloads.dumps(retry),
    )


def holder(txn: WriteTxn, name: str, workflow_id: str | None) -> str | None:
    """The live run of `name` that holds `workflow_id`, if any (a child start must not clash).

    A run waiting ENQUEUED in its queue holds its id as a RUNNING one does.
    """
    if workflow_id is None:
        return None
    for run in txn.runs_of_key(name, workflow_id):
        if run.state in ("RUNNING", "ENQUEUED"):
            return run.exec_id
    return None


def admissible(
    registry: Registry,
    txn: WriteTxn,
    name: str,
    attrs: dict[str, Any],
    now: datetime,
) -> tuple[str | None, dict[str, Any] | None]:
    """The queue the child waits in (None: it runs at once), or the refusal to record.

    Checked before anything of the child is written, the quota counted
    last, so a refused start writes nothing (and counts no quota).
    """
    flow = recorded_flow(attrs)
    try:
        queue = enqueue.queue_of(registry, name, flow)
        if queue is not None:
            enqueue.check(txn, queue, flow, registry)
        enqueue.check_quota(registry, txn, name, now)
    except _QUEUE_REFUSALS as exc:
        return None, queue_refusal(attrs, exc)
    return queue, None


def queue_refusal(attrs: dict[str, Any], error: HarvestError) -> dict[str, Any]:
    """The attrs of a child start its queue refused; the parent sees its type."""
    holding = getattr(error, "exec_id", None)  # DuplicateEnqueue's run
    return {
        REFUSED: {
            "workflow_id": attrs.get("workflow_id"),
            "exec_id": None if holding is None else str(holding),
            "type": type(error).__name__,
            "message": error.message,
            "non_retryable": not isinstance(error, QuotaExceeded),
        }
    }


def refusal(workflow_id: str | None, holder: str) -> dict[str, Any]:
    """The attrs a refused child start records; the parent's code sees them as an error."""
    return {REFUSED: {"workflow_id": workflow_id, "exec_id": holder}}
