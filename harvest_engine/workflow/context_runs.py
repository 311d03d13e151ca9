"""OtherRunsCalls: the calls of a WorkflowContext that reach other runs (children, signals, cancels, waits).

The base class of `WorkflowContext` (context.py), which adds the run's own
calls; it holds the run's `Machine`, and every method here records one
command on it and waits for what the other run's side recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import ApplicationError
from harvest_engine.names import check_name
from harvest_engine.states import ExecutionId
from harvest_engine.workflow.child_options import (
    child_options,
    flow_options,
    refusal_error,
)
from harvest_engine.workflow.deadlines import child_within
from harvest_engine.workflow.parent_close import ParentClosePolicy
from harvest_engine.workflow.recorded_errors import raise_recorded
from harvest_engine.workflow.targets import checked_value, workflow_target

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.authoring import RetryPolicy, WorkflowInfo
    from harvest_engine.durations import Duration
    from harvest_engine.workflow.machine import Machine


class OtherRunsCalls:
    """Child workflows and the external-run commands of `WorkflowContext`."""

    def __init__(self, machine: Machine) -> None:
        self._machine = machine

    async def spawn_child_workflow(
        self,
        workflow: Callable[..., Any] | WorkflowInfo | str,
        input: Any = None,
        timeout: Duration | None = None,  # noqa: ASYNC109 -- a durable timer (API.md), not asyncio.timeout
        *,
        workflow_id: str | None = None,
        retry: RetryPolicy | None = None,
        execution_timeout: Duration | None = None,
        parent_close_policy: ParentClosePolicy | str | None = None,
        queue: str | None = None,
        priority: int | None = None,
        partition_key: str | None = None,
        dedup_id: str | None = None,
        start_delay: Duration | None = None,
    ) -> Any:
        """Start a child run and wait for its result.

        Args:
            workflow: the child's @workflow function or name.
            input: its start input.
            timeout: how long the parent waits (a durable timer).
            workflow_id: the child's business id (default: its run id); a
                RUNNING run holding it refuses the start.
            retry: the child's retry policy, instead of its @workflow one.
            execution_timeout: the child's own deadline, instead of its
                @workflow one.
            parent_close_policy: what the child gets if the parent ends
                first (default: left running).
            queue: a registered queue (as `StartOptions`): the child waits
                ENQUEUED there until admitted, the parent waiting on it as on
                any child. Without one, a child whose workflow declares
                `concurrency` / `throttle` waits in its workflow's own queue.
            priority: its priority in the queue (lower first).
            partition_key: its partition of the queue.
            dedup_id: refused (``DuplicateEnqueue``) while a run of the queue
                with this id is ENQUEUED or RUNNING.
            start_delay: it waits ENQUEUED at least this long.

        Raises:
            ChildWorkflowError: the child failed (its type, details and
                retryability), was cancelled or terminated, `timeout` passed
                first (type ``ChildWorkflowTimeout``), its workflow id is
                held by a running run (``ChildWorkflowAlreadyStarted``), or
                its queue refused it (``UnknownQueue``, ``DuplicateEnqueue``,
                ``QuotaExceeded``, ``InvalidFlowOption``).
            InvalidFlowOption: a bad queue option (nothing is recorded).
        """
        name, result_type = workflow_target(workflow)
        attrs = {
            "workflow_name": name,
            "input": checked_value(input, "child input"),
            **child_options(
                workflow_id=workflow_id,
                retry=retry,
                execution_timeout=execution_timeout,
                parent_close_policy=parent_close_policy,
            ),
            **flow_options(
                queue=queue,
                priority=priority,
                partition_key=partition_key,
                dedup_id=dedup_id,
                start_delay=start_delay,
            ),
        }
        child, future = self._machine.commands.start_child(attrs, attached=True)
        if future is None:
            raise ApplicationError("an attached child has a result future")
        if timeout is None:
            result = await future
            return payloads.from_json(result, result_type)
        result = await child_within(self._machine, name, child, future, timeout)
        return payloads.from_json(result, result_type)

    async def spawn_child_workflow_detached(
        self,
        workflow: Callable[..., Any] | WorkflowInfo | str,
        input: Any = None,
        parent_close_policy: ParentClosePolicy | str = ParentClosePolicy.REQUEST_CANCEL,
        *,
        workflow_id: str | None = None,
        retry: RetryPolicy | None = None,
        execution_timeout: Duration | None = None,
        queue: str | None = None,
        priority: int | None = None,
        partition_key: str | None = None,
        dedup_id: str | None = None,
        start_delay: Duration | None = None,
    ) -> ExecutionId:
        """Start a child run the parent does not wait for; its id once the start is recorded.

        The options are those of `spawn_child_workflow`.

        Raises:
            ChildWorkflowError: type ``ChildWorkflowAlreadyStarted`` when a
                RUNNING run holds `workflow_id`; a refusal of its queue, of
                the type of the error (``UnknownQueue``, ``DuplicateEnqueue``,
                ``QuotaExceeded``, ``InvalidFlowOption``).
        """
        name, _ = workflow_target(workflow)
        attrs = {
            "workflow_name": name,
            "input": checked_value(input, "child input"),
            **child_options(
                workflow_id=workflow_id,
                retry=retry,
                execution_timeout=execution_timeout,
                parent_close_policy=parent_close_policy,
            ),
            **flow_options(
                queue=queue,
                priority=priority,
                partition_key=partition_key,
                dedup_id=dedup_id,
                start_delay=start_delay,
            ),
        }
        child, started = self._machine.commands.start_child(attrs, attached=False)
        if started is not None:
            recorded = await started
            refused = refusal_error(name, recorded)
            if refused is not None:
                raise refused
        return ExecutionId(child)

    async def signal_external_workflow(
        self, exec_id: ExecutionId | str, name: str, payload: Any = None
    ) -> None:
        """Stage a signal on another RUNNING run (ExternalWorkflowError when it cannot)."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError("a signal name is non-empty text")
        check_name(name, "signal name")
        recorded = await self._machine.commands.external(
            "ExternalSignalSent",
            {
                "target": str(exec_id),
                "name": name,
                "payload": checked_value(payload, "signal payload"),
            },
        )
        raise_recorded(recorded)

    async def request_cancel_external_workflow(
        self, exec_id: ExecutionId | str
    ) -> None:
        """Cancel another run at once (a hard seal: its body does not run again)."""
        recorded = await self._machine.commands.external(
            "ExternalCancelRequested", {"target": str(exec_id)}
        )
        raise_recorded(recorded)

    async def await_external_workflow(self, exec_id: ExecutionId | str) -> Any:
        """Wait for another run's result, following its continue-as-new chain.

        Raises:
            ExternalWorkflowError: ``target_unknown`` (no such run),
                ``target_terminated``, or the target's own failure.
        """
        return await self._machine.commands.await_workflow(str(exec_id))
