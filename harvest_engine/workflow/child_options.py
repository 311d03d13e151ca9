"""The options of a child start (`spawn_child_workflow(..., workflow_id=, retry=, ...)`) as recorded attrs.

They travel on the ChildWorkflowStarted event, so the runtime starts the
child from the history alone and a replay sees the same command.
"""

from __future__ import annotations

from typing import Any

from harvest_engine.authoring import RetryPolicy
from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.errors import ChildWorkflowError
from harvest_engine.workflow.parent_close import ParentClosePolicy

# The ChildWorkflowStarted attribute a refused start records (its workflow
# id is held by a RUNNING run); the parent sees ChildWorkflowError of this type.
REFUSED = "refused"
ALREADY_STARTED = "ChildWorkflowAlreadyStarted"


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


def refusal_error(name: str, attrs: dict[str, Any]) -> ChildWorkflowError | None:
    """The error a recorded ChildWorkflowStarted carries when its start was refused."""
    refused = attrs.get(REFUSED)
    if not isinstance(refused, dict):
        return None
    return ChildWorkflowError(
        f"child workflow {name} with id {refused.get('workflow_id')!r} is already "
        f"running as {refused.get('exec_id')}",
        type=ALREADY_STARTED,
        non_retryable=True,
        details=refused,
    )
