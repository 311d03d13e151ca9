"""Starting runs: input caps before anything persists, fresh runs, AllowDuplicate attach."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.runtime.decide import start_run
from harvest_engine.states import ExecutionId
from harvest_engine.store.protocol import NewExecution, WriteTxn

if TYPE_CHECKING:
    from harvest_engine.runtime.runtime import SqliteRuntime


def checked_input(value: Any) -> str:
    """The start input as stored JSON; PayloadTooLarge / PayloadTooDeep before any write."""
    return payloads.check(payloads.to_json(value), "start input")


def new_execution(
    rt: SqliteRuntime,
    name: str,
    workflow_id: str | None,
    encoded_input: str,
    **extra: Any,
) -> NewExecution:
    """The row of a fresh run of `name`; a blank workflow id becomes the run's own id."""
    info = rt.registry.workflow(name)
    exec_id = str(ExecutionId.new())
    now = rt.clock.now()
    wid = workflow_id if workflow_id is not None and workflow_id.strip() else exec_id
    return NewExecution(
        exec_id=exec_id,
        workflow_name=name,
        workflow_id=wid,
        input=encoded_input,
        deadline=None if info.execution_timeout is None else now + info.execution_timeout,
        retry_policy=None if info.retry is None else payloads.dumps(info.retry.to_json()),
        **extra,
    )


def insert(rt: SqliteRuntime, txn: WriteTxn, new: NewExecution) -> ExecutionId:
    """Insert the run and its WorkflowStarted event."""
    start_run(txn, new, rt.clock.now())
    return ExecutionId(new.exec_id)


def start_fresh(
    rt: SqliteRuntime, name: str, workflow_id: str | None, input: Any
) -> ExecutionId:
    """A new run, whatever runs exist."""
    encoded = checked_input(input)
    new = new_execution(rt, name, workflow_id, encoded)
    with rt.store.write() as txn:
        return insert(rt, txn, new)


def start_with_id(
    rt: SqliteRuntime, name: str, workflow_id: str, input: Any
) -> ExecutionId:
    """AllowDuplicate: attach to the RUNNING run of (name, id), else start a fresh one.

    The attached call's input is discarded, so a retried webhook does not
    repeat side effects. A blank id has no reuse key: always a fresh run.
    """
    if not isinstance(workflow_id, str):
        raise TypeError(f"workflow_id must be text, got {workflow_id!r}")
    encoded = checked_input(input)
    rt.registry.workflow(name)
    if not workflow_id.strip():
        return start_fresh(rt, name, None, input)
    with rt.store.write() as txn:
        for run in txn.runs_of_key(name, workflow_id):
            if run.state == "RUNNING":
                return ExecutionId(run.exec_id)
        return insert(rt, txn, new_execution(rt, name, workflow_id, encoded))
