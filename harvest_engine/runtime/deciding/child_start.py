"""What a recorded child start asks for: its workflow id, deadline and retry, and whether the id is free."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.workflow.child_options import REFUSED

if TYPE_CHECKING:
    from harvest_engine.authoring import WorkflowInfo
    from harvest_engine.store.txn_protocol import WriteTxn


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
    """The RUNNING run of `name` that holds `workflow_id`, if any (a child start must not clash)."""
    if workflow_id is None:
        return None
    for run in txn.runs_of_key(name, workflow_id):
        if run.state == "RUNNING":
            return run.exec_id
    return None


def refusal(workflow_id: str | None, holder: str) -> dict[str, Any]:
    """The attrs a refused child start records; the parent's code sees them as an error."""
    return {REFUSED: {"workflow_id": workflow_id, "exec_id": holder}}
