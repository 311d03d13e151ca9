"""Carrying out starts: the new run's row, replacing or resealing priors, the start calls.

What a start does about the runs of its id is the matrix in `starts.py`;
this module writes it, each start in one write transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import models, payloads
from harvest_engine.calls import (
    StartOptions,
    StartOutcome,
    WorkflowIdReusePolicy,
    checked_input,
    checked_label,
    checked_memo,
    checked_search_attributes,
)
from harvest_engine.errors import WorkflowAlreadyStarted
from harvest_engine.events import IMPOSED, HistoryEvent
from harvest_engine.names import check_name, check_optional_name
from harvest_engine.runtime.deciding import enqueue
from harvest_engine.runtime.deciding.children import seal_run
from harvest_engine.runtime.deciding.runs import start_run
from harvest_engine.runtime.talking.starts import StartPlan, plan_start
from harvest_engine.states import ExecutionId
from harvest_engine.store.rows import ExecutionRecord, NewExecution

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

    from harvest_engine.calls import FlowStart
    from harvest_engine.runtime.engine import Engine
    from harvest_engine.store.txn_protocol import WriteTxn

# The WorkflowCancelled reason of a RUNNING run replaced by a plain start.
REPLACED_BY_START = "terminated by a TERMINATE_IF_RUNNING start"


def _reuse_key(workflow_id: str | None) -> str | None:
    """The reuse key of a workflow id; None for no id or a blank one."""
    if workflow_id is None:
        return None
    check_name(workflow_id, "workflow id")
    return workflow_id if workflow_id.strip() else None


# -- writing --------------------------------------------------------------------


def new_execution(
    engine: Engine,
    name: str,
    workflow_id: str | None,
    encoded_input: str,
    **extra: Any,
) -> NewExecution:
    """The row of a fresh run of `name`; a blank workflow id becomes the run's own id.

    Raises:
        PayloadInvalid: the workflow takes a pydantic model the input does not fit.
    """
    info = engine.registry.workflow(name)
    if models.is_model_class(info.input_type):
        models.check_input(
            payloads.loads(encoded_input), info.input_type, "workflow input"
        )
    exec_id = str(ExecutionId.new())
    now = engine.clock.now()
    wid = workflow_id if workflow_id is not None and workflow_id.strip() else exec_id
    return NewExecution(
        exec_id=exec_id,
        workflow_name=name,
        workflow_id=wid,
        input=encoded_input,
        deadline=None
        if info.execution_timeout is None
        else now + info.execution_timeout,
        retry_policy=None
        if info.retry is None
        else payloads.dumps(info.retry.to_json()),
        **extra,
    )


def insert(
    engine: Engine, txn: WriteTxn, new: NewExecution, flow: FlowStart | None = None
) -> ExecutionId:
    """Insert the run and its WorkflowStarted event; ENQUEUED when it starts into a queue.

    A workflow's own quota counts the start (refused with `QuotaExceeded`),
    and a start into a queue (`flow`, or the workflow's own concurrency or
    throttle) waits there until admitted (runtime/flow/).
    """
    registry, now = engine.registry, engine.clock.now()
    queue = None
    if flow is not None or registry.workflow_limits:
        queue = enqueue.queue_of(registry, new.workflow_name, flow)
        enqueue.check_quota(registry, txn, new.workflow_name, now)
    start_run(
        txn,
        new,
        now,
        advice_at=engine.settings.advice_at(),
        advice_bytes=engine.settings.advice_bytes(),
    )
    if queue is not None:
        enqueue.enqueue(registry, txn, new, queue, flow, now)
    return ExecutionId(new.exec_id)


def replace_running(
    engine: Engine,
    txn: WriteTxn,
    row: ExecutionRecord,
    successor: str,
    reason: str,
    now: datetime,
) -> None:
    """End a RUNNING (or ENQUEUED) run for its replacement: WorkflowCancelled, sealed CONTINUED_AS_NEW."""
    if row.state == "ENQUEUED":
        txn.flow().drop_wait(row.exec_id)
    event = HistoryEvent(
        seq=row.next_seq,
        type="WorkflowCancelled",
        at=now,
        attrs={"reason": reason, IMPOSED: True},
    )
    txn.append_events(row.exec_id, [event])
    # Like every other ending, a replaced run gives its detached children
    # their parent-close policy (guide §9).
    seal_run(
        txn,
        row.exec_id,
        "CONTINUED_AS_NEW",
        now,
        engine.ends,
        parent=row.parent_exec_id,
    )
    txn.update_execution(row.exec_id, successor=successor)


def reseal_closed(txn: WriteTxn, row: ExecutionRecord, successor: str) -> None:
    """Mark a closed prior CONTINUED_AS_NEW for its replacement; its close time stays."""
    txn.update_execution(
        row.exec_id, state="CONTINUED_AS_NEW", successor=row.successor or successor
    )


def apply_fresh(
    engine: Engine,
    txn: WriteTxn,
    plan: StartPlan,
    new: NewExecution,
    reason: str,
    now: datetime,
    flow: FlowStart | None = None,
) -> ExecutionId:
    """Carry out a "fresh" plan in `txn`: replace, reseal, then insert the new run."""
    for row in plan.replace:
        replace_running(engine, txn, row, new.exec_id, reason, now)
    if plan.reseal is not None:
        reseal_closed(txn, plan.reseal, new.exec_id)
    return insert(engine, txn, new, flow)


def refused(
    name: str,
    workflow_id: str,
    prior: ExecutionRecord | None,
    policy: WorkflowIdReusePolicy,
) -> WorkflowAlreadyStarted:
    """The error of a refused start, naming the prior run."""
    return WorkflowAlreadyStarted(
        workflow_name=name,
        workflow_id=workflow_id,
        exec_id=prior.exec_id if prior is not None else "",
        state=prior.state if prior is not None else "",
        policy=policy.name,
    )


# -- the start calls -------------------------------------------------------------


def start_fresh(
    engine: Engine, name: str, workflow_id: str | None, input: Any
) -> ExecutionId:
    """A new run, whatever runs exist."""
    check_name(name, "workflow name")
    check_optional_name(workflow_id, "workflow id")
    encoded = checked_input(input, engine.registry.shaping_of(name).max_input_bytes)
    new = new_execution(engine, name, workflow_id, encoded)
    with engine.store.write() as txn:
        return insert(engine, txn, new)


def start_with_policy(
    engine: Engine,
    name: str,
    workflow_id: str | None,
    input: Any,
    policy: WorkflowIdReusePolicy | str,
    *,
    memo: Any = None,
    search_attributes: Mapping[str, Any] | None = None,
    summary: str | None = None,
    details: str | None = None,
    flow: FlowStart | None = None,
) -> StartOutcome:
    """Start under `policy` (the module's matrix) in one write transaction.

    Every payload is checked before the transaction opens, so an oversized
    or too-deep input, memo or attribute set persists nothing.
    """
    policy = WorkflowIdReusePolicy.coerce(policy)
    check_name(name, "workflow name")
    key = _reuse_key(workflow_id)
    encoded = checked_input(input, engine.registry.shaping_of(name).max_input_bytes)
    extra = {
        "memo": checked_memo(memo),
        "search_attributes": checked_search_attributes(search_attributes),
    }
    labels = (checked_label(summary, "summary"), checked_label(details, "details"))
    engine.registry.workflow(name)
    if key is None:
        new = new_execution(engine, name, None, encoded, **extra)
        with engine.store.write() as txn:
            exec_id = insert(engine, txn, new, flow)
            _label(txn, exec_id, labels)
            return StartOutcome(exec_id, started_fresh=True)
    with engine.store.write() as txn:
        plan = plan_start(txn.runs_of_key(name, key), policy)
        if plan.action == "attach" and plan.prior is not None:
            return StartOutcome(ExecutionId(plan.prior.exec_id), started_fresh=False)
        if plan.action == "refuse":
            raise refused(name, key, plan.prior, policy)
        new = new_execution(engine, name, key, encoded, **extra)
        exec_id = apply_fresh(
            engine, txn, plan, new, REPLACED_BY_START, engine.clock.now(), flow
        )
        _label(txn, exec_id, labels)
        return StartOutcome(exec_id, started_fresh=True)


def _label(
    txn: WriteTxn, exec_id: str | ExecutionId, labels: tuple[str | None, str | None]
) -> None:
    """Store a fresh run's summary and details (StartOptions), when it has any."""
    if labels != (None, None):
        txn.set_run_labels(str(exec_id), *labels)


def start_with_id(
    engine: Engine, name: str, workflow_id: str, input: Any
) -> ExecutionId:
    """AllowDuplicate: attach to the RUNNING run of (name, id), else start a fresh one.

    The attached call's input is discarded, so a retried webhook does not
    repeat side effects. A blank id has no reuse key: always a fresh run.
    """
    check_name(workflow_id, "workflow id")
    outcome = start_with_policy(
        engine, name, workflow_id, input, WorkflowIdReusePolicy.ALLOW_DUPLICATE
    )
    return outcome.exec_id


def start_with_options(
    engine: Engine, name: str, input: Any, options: StartOptions
) -> StartOutcome:
    """Start with a memo, first search attributes and a reuse policy."""
    if not isinstance(options, StartOptions):
        raise TypeError(
            f"start_workflow_with_options needs StartOptions, got {options!r}"
        )
    return start_with_policy(
        engine,
        name,
        options.workflow_id,
        input,
        options.reuse_policy,
        memo=options.memo,
        search_attributes=options.search_attributes,
        summary=options.summary,
        details=options.details,
        flow=options.flow,
    )
