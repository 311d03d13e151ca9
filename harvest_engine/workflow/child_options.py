"""The options of a child start (`spawn_child_workflow(..., workflow_id=, retry=, ...)`) as recorded attrs.

They travel on the ChildWorkflowStarted event, so the runtime starts the
child from the history alone and a replay sees the same command. The
queue options (`queue=`, `priority=`, `partition_key=`, `dedup_id=`,
`start_delay=`, the names of `StartOptions`) go under one attr, ``flow``.
"""

from __future__ import annotations

from typing import Any

from harvest_engine.authoring import RetryPolicy
from harvest_engine.calls import FlowStart
from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.errors import ChildWorkflowError
from harvest_engine.workflow.parent_close import ParentClosePolicy

# The ChildWorkflowStarted attribute a refused start records (its workflow
# id is held by a RUNNING run); the parent sees ChildWorkflowError of this type.
REFUSED = "refused"
ALREADY_STARTED = "ChildWorkflowAlreadyStarted"
# The ChildWorkflowStarted attribute holding the start's queue options.
FLOW = "flow"


def child_options(
    *,
    workflow_id: str | None,
    retry: RetryPolicy | None,
    execution_timeout: Duration | None,
    parent_close_policy: ParentClosePolicy | str | None,
) -> dict[str, Any]:
    """The attrs of the options that were given (none for a default).

    Raises:
        ValueError: a blank workflow id, a non-positive timeout or an
            unknown parent close policy.
        TypeError: `retry` is not a RetryPolicy.
    """
    attrs: dict[str, Any] = {}
    if workflow_id is not None:
        if not isinstance(workflow_id, str) or not workflow_id.strip():
            raise ValueError(
                f"a child's workflow id is non-empty text, got {workflow_id!r}"
            )
        attrs["workflow_id"] = workflow_id
    if retry is not None:
        if not isinstance(retry, RetryPolicy):
            raise TypeError(f"retry takes a RetryPolicy, got {type(retry).__name__}")
        attrs["retry"] = retry.to_json()
    if execution_timeout is not None:
        seconds = to_timedelta(
            execution_timeout, what="child execution_timeout"
        ).total_seconds()
        if seconds <= 0:
            raise ValueError("a child's execution_timeout is positive")
        attrs["execution_timeout"] = seconds
    if parent_close_policy is not None:
        attrs["parent_close_policy"] = ParentClosePolicy.coerce(
            parent_close_policy
        ).value
    return attrs


def flow_options(
    *,
    queue: str | None,
    priority: int | None,
    partition_key: str | None,
    dedup_id: str | None,
    start_delay: Duration | None,
) -> dict[str, Any]:
    """The ``flow`` attr of a child start into a queue (none when no option was given).

    Raises:
        InvalidFlowOption: a blank queue, partition key or dedup id, a
            priority out of range or a bad delay (before anything is recorded).
    """
    given = (queue, priority, partition_key, dedup_id, start_delay)
    if all(value is None for value in given):
        return {}
    flow = FlowStart.checked(
        queue=queue,
        priority=priority,
        partition_key=partition_key,
        dedup_id=dedup_id,
        start_delay=start_delay,
    )
    recorded: dict[str, Any] = {
        "queue": flow.queue,
        "priority": flow.priority,
        "partition_key": flow.partition_key,
        "dedup_id": flow.dedup_id,
        "delay_seconds": flow.delay_seconds,
    }
    return {FLOW: {k: v for k, v in recorded.items() if v}}


def recorded_flow(attrs: dict[str, Any]) -> FlowStart | None:
    """The queue options a recorded child start carries (None: it gave none)."""
    flow = attrs.get(FLOW)
    if not isinstance(flow, dict):
        return None
    return FlowStart(
        queue=flow.get("queue"),
        priority=int(flow.get("priority", 0)),
        partition_key=flow.get("partition_key"),
        dedup_id=flow.get("dedup_id"),
        delay_seconds=float(flow.get("delay_seconds", 0.0)),
    )


def refusal_error(name: str, attrs: dict[str, Any]) -> ChildWorkflowError | None:
    """The error a recorded ChildWorkflowStarted carries when its start was refused.

    A refusal by the child's queue names its error (``UnknownQueue``,
    ``DuplicateEnqueue``, ``QuotaExceeded``, ``InvalidFlowOption``) as the
    ChildWorkflowError's type; a held workflow id is ``ChildWorkflowAlreadyStarted``.
    """
    refused = attrs.get(REFUSED)
    if not isinstance(refused, dict):
        return None
    if "type" in refused:
        return ChildWorkflowError(
            f"child workflow {name} was not started: {refused.get('message')}",
            type=str(refused["type"]),
            non_retryable=bool(refused.get("non_retryable", True)),
            details=refused,
        )
    return ChildWorkflowError(
        f"child workflow {name} with id {refused.get('workflow_id')!r} is already "
        f"running as {refused.get('exec_id')}",
        type=ALREADY_STARTED,
        non_retryable=True,
        details=refused,
    )
