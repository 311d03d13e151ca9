r"""Starting runs: input caps before anything persists, and the workflow-id reuse-policy matrix.

The matrix. The prior is the newest run of the
(workflow_name, workflow_id) key; a RUNNING run of the key wins over it.

| prior \ policy | ALLOW_DUPLICATE | ALLOW_DUPLICATE_FAILED_ONLY | REJECT_DUPLICATE | TERMINATE_IF_RUNNING |
| --- | --- | --- | --- | --- |
| none | fresh | fresh | fresh | fresh |
| RUNNING | attach | attach | refused | replace |
| COMPLETED | fresh | refused | refused | fresh |
| FAILED, TIMED_OUT | fresh | fresh | refused | fresh |
| CANCELLED | fresh | fresh | refused | fresh |
| TERMINATED | fresh | fresh | fresh | fresh |

- *attach*: the call returns the RUNNING run (`started_fresh=False`); the new
  input, memo and search attributes are discarded, so a retried webhook does
  not repeat side effects.
- *refused*: `WorkflowAlreadyStarted`, carrying the prior's exec id; nothing
  is written.
- *replace*: in one transaction every RUNNING run of the key gets
  `WorkflowCancelled` and is sealed CONTINUED_AS_NEW with the fresh run as
  its successor (so `outcome(prior)` is `Terminated("CONTINUED_AS_NEW")`),
  then the fresh run starts.
- A TERMINATED prior frees its workflow id for every policy.
- A blank or whitespace-only workflow id has no reuse key: always a fresh run.

Signal-with-start (see `signal_with_start.py`) differs for a prior that is not
RUNNING: a RUNNING run with a pending cancel counts as CANCELLED, and a start
over a closed prior seals that prior CONTINUED_AS_NEW as well.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import (
    InvalidSearchAttribute,
    WorkflowAlreadyStarted,
)
from harvest_engine.events import HistoryEvent
from harvest_engine.filters import NUL, NUL_REASON
from harvest_engine.names import check_name, check_optional_name
from harvest_engine.runtime.children import seal_run
from harvest_engine.runtime.runs import start_run
from harvest_engine.states import ExecutionId
from harvest_engine.store.protocol import ExecutionRecord, NewExecution, WriteTxn

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.runtime.runtime import SqliteRuntime

# The WorkflowCancelled reason of a RUNNING run replaced by a plain start.
REPLACED_BY_START = "terminated by a TERMINATE_IF_RUNNING start"


class WorkflowIdReusePolicy(enum.Enum):
    """What a start with a workflow id does when a run of that id exists (see the module table)."""

    ALLOW_DUPLICATE = "ALLOW_DUPLICATE"
    ALLOW_DUPLICATE_FAILED_ONLY = "ALLOW_DUPLICATE_FAILED_ONLY"
    REJECT_DUPLICATE = "REJECT_DUPLICATE"
    TERMINATE_IF_RUNNING = "TERMINATE_IF_RUNNING"

    @classmethod
    def coerce(cls, value: WorkflowIdReusePolicy | str) -> WorkflowIdReusePolicy:
        """The policy itself, or the policy named by its text (``"REJECT_DUPLICATE"``)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                pass
        names = ", ".join(member.name for member in cls)
        raise ValueError(f"unknown workflow id reuse policy {value!r} (known: {names})")


@dataclass(frozen=True)
class StartOutcome:
    """What a start did: the run it returns, and whether that run is new.

    Attributes:
        exec_id: the fresh run, or the RUNNING run the call attached to.
        started_fresh: True when this call created the run.
    """

    exec_id: ExecutionId
    started_fresh: bool


@dataclass(frozen=True)
class StartOptions:
    """Options of `start_workflow_with_options`.

    Attributes:
        workflow_id: the business id (the reuse key); None or blank: the run's own id.
        memo: a JSON value stored with the run; the code may change it with
            `ctx.upsert_memo` (a memo that is not an object reads as {"value": memo}).
        search_attributes: the run's first search attributes (a JSON object).
        reuse_policy: what to do when a run of the id exists (see `WorkflowIdReusePolicy`).
    """

    workflow_id: str | None = None
    memo: Any = None
    search_attributes: Mapping[str, Any] = field(default_factory=dict)
    reuse_policy: WorkflowIdReusePolicy = WorkflowIdReusePolicy.ALLOW_DUPLICATE


@dataclass(frozen=True)
class StartPlan:
    """The matrix's answer for one start.

    Attributes:
        action: "fresh", "attach" or "refuse".
        prior: the run the answer is about (attached to, refusing, or replaced).
        replace: RUNNING runs to seal CONTINUED_AS_NEW before the fresh run starts.
        reseal: a closed prior to mark CONTINUED_AS_NEW (signal-with-start only).
    """

    action: str
    prior: ExecutionRecord | None = None
    replace: tuple[ExecutionRecord, ...] = ()
    reseal: ExecutionRecord | None = None


_FREES_THE_ID = frozenset({"TERMINATED", "CONTINUED_AS_NEW"})


def plan_start(
    runs: Sequence[ExecutionRecord], policy: WorkflowIdReusePolicy
) -> StartPlan:
    """Apply the plain start matrix to the runs of a key (newest first)."""
    running = tuple(r for r in runs if r.state == "RUNNING")
    if running:
        if policy is WorkflowIdReusePolicy.TERMINATE_IF_RUNNING:
            return StartPlan("fresh", prior=running[0], replace=running)
        if policy is WorkflowIdReusePolicy.REJECT_DUPLICATE:
            return StartPlan("refuse", prior=running[0])
        return StartPlan("attach", prior=running[0])
    prior = runs[0] if runs else None
    if prior is None or prior.state in _FREES_THE_ID:
        return StartPlan("fresh", prior=prior)
    return _closed_prior(prior, prior.state, policy)


def _closed_prior(
    prior: ExecutionRecord, state: str, policy: WorkflowIdReusePolicy
) -> StartPlan:
    """The matrix row of a closed prior that did not free its id."""
    if policy is WorkflowIdReusePolicy.REJECT_DUPLICATE:
        return StartPlan("refuse", prior=prior)
    if (
        policy is WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY
        and state == "COMPLETED"
    ):
        return StartPlan("refuse", prior=prior)
    return StartPlan("fresh", prior=prior)


def plan_signal_with_start(
    runs: Sequence[ExecutionRecord], policy: WorkflowIdReusePolicy, now: datetime
) -> StartPlan:
    """The signal-with-start matrix: a signal cannot land on a run about to end.

    A RUNNING run without a pending cancel is signalled (attach), unless the
    policy is TERMINATE_IF_RUNNING, which replaces it. A RUNNING run with a
    pending cancel counts as CANCELLED, and one past its execution deadline
    as TIMED_OUT: its next drive ends it. A fresh start replaces every
    RUNNING run of the key and reseals a closed prior CONTINUED_AS_NEW; a
    TERMINATED prior frees the id and stays as it is.
    """
    running = tuple(r for r in runs if r.state == "RUNNING")
    live = [r for r in running if _can_take_signals(r, now)]
    if live:
        if policy is WorkflowIdReusePolicy.TERMINATE_IF_RUNNING:
            return StartPlan("fresh", prior=live[0], replace=running)
        return StartPlan("attach", prior=live[0])
    prior = runs[0] if runs else None
    if prior is None or prior.state in _FREES_THE_ID:
        return StartPlan("fresh", prior=prior, replace=running)
    state = prior.state
    if state == "RUNNING":
        state = "CANCELLED" if prior.cancel_reason is not None else "TIMED_OUT"
    plan = _closed_prior(prior, state, policy)
    if plan.action != "fresh":
        return plan
    reseal = None if prior.state == "RUNNING" else prior
    return StartPlan("fresh", prior=prior, replace=running, reseal=reseal)


def _can_take_signals(row: ExecutionRecord, now: datetime) -> bool:
    """A RUNNING run whose next drive does not end it (no pending cancel, deadline ahead)."""
    if row.cancel_reason is not None:
        return False
    return row.deadline is None or now < row.deadline


# -- checks before anything persists ------------------------------------------


def checked_input(value: Any) -> str:
    """The start input as stored JSON; PayloadTooLarge / PayloadTooDeep before any write."""
    return payloads.check(value, "start input")


def checked_memo(value: Any) -> str | None:
    """The memo as stored JSON (None when there is none), under the payload caps."""
    if value is None:
        return None
    return payloads.check(value, "memo")


def checked_search_attributes(value: Mapping[str, Any] | None) -> str | None:
    """The first search attributes as a stored JSON object (None when empty).

    A start does not apply the `upsert_search_attrs` key rules and
    search attributes have no size cap of their own; they must be a JSON
    object with text keys, within the nesting cap.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidSearchAttribute(
            key="(all)",
            reason=f"search attributes are a mapping, got {type(value).__name__}",
        )
    for key, item in value.items():
        if not isinstance(key, str):
            raise InvalidSearchAttribute(key=repr(key), reason="keys are text")
        check_name(key, "search attribute key")
        if isinstance(item, str) and NUL in item:
            raise InvalidSearchAttribute(key=key, reason=NUL_REASON)
    if not value:
        return None
    return payloads.dumps(payloads.to_json(dict(value), "search attributes"))


def _reuse_key(workflow_id: str | None) -> str | None:
    """The reuse key of a workflow id; None for no id or a blank one."""
    if workflow_id is None:
        return None
    check_name(workflow_id, "workflow id")
    return workflow_id if workflow_id.strip() else None


# -- writing --------------------------------------------------------------------


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
        deadline=None
        if info.execution_timeout is None
        else now + info.execution_timeout,
        retry_policy=None
        if info.retry is None
        else payloads.dumps(info.retry.to_json()),
        **extra,
    )


def insert(rt: SqliteRuntime, txn: WriteTxn, new: NewExecution) -> ExecutionId:
    """Insert the run and its WorkflowStarted event."""
    start_run(txn, new, rt.clock.now(), advice_at=rt.settings.advice_at())
    return ExecutionId(new.exec_id)


def replace_running(
    rt: SqliteRuntime,
    txn: WriteTxn,
    row: ExecutionRecord,
    successor: str,
    reason: str,
    now: datetime,
) -> None:
    """End a RUNNING run for its replacement: WorkflowCancelled, sealed CONTINUED_AS_NEW."""
    event = HistoryEvent(
        seq=row.next_seq, type="WorkflowCancelled", at=now, attrs={"reason": reason}
    )
    txn.append_events(row.exec_id, [event])
    # Like every other ending, a replaced run gives its detached children
    # their parent-close policy (guide §9).
    seal_run(txn, row.exec_id, "CONTINUED_AS_NEW", now, rt.cache.evict)
    txn.update_execution(row.exec_id, successor=successor)


def reseal_closed(txn: WriteTxn, row: ExecutionRecord, successor: str) -> None:
    """Mark a closed prior CONTINUED_AS_NEW for its replacement; its close time stays."""
    txn.update_execution(
        row.exec_id, state="CONTINUED_AS_NEW", successor=row.successor or successor
    )


def apply_fresh(
    rt: SqliteRuntime,
    txn: WriteTxn,
    plan: StartPlan,
    new: NewExecution,
    reason: str,
    now: datetime,
) -> ExecutionId:
    """Carry out a "fresh" plan in `txn`: replace, reseal, then insert the new run."""
    for row in plan.replace:
        replace_running(rt, txn, row, new.exec_id, reason, now)
    if plan.reseal is not None:
        reseal_closed(txn, plan.reseal, new.exec_id)
    return insert(rt, txn, new)


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
    rt: SqliteRuntime, name: str, workflow_id: str | None, input: Any
) -> ExecutionId:
    """A new run, whatever runs exist."""
    check_name(name, "workflow name")
    check_optional_name(workflow_id, "workflow id")
    encoded = checked_input(input)
    new = new_execution(rt, name, workflow_id, encoded)
    with rt.store.write() as txn:
        return insert(rt, txn, new)


def start_with_policy(
    rt: SqliteRuntime,
    name: str,
    workflow_id: str | None,
    input: Any,
    policy: WorkflowIdReusePolicy | str,
    *,
    memo: Any = None,
    search_attributes: Mapping[str, Any] | None = None,
) -> StartOutcome:
    """Start under `policy` (the module's matrix) in one write transaction.

    Every payload is checked before the transaction opens, so an oversized
    or too-deep input, memo or attribute set persists nothing.
    """
    policy = WorkflowIdReusePolicy.coerce(policy)
    check_name(name, "workflow name")
    key = _reuse_key(workflow_id)
    encoded = checked_input(input)
    extra = {
        "memo": checked_memo(memo),
        "search_attributes": checked_search_attributes(search_attributes),
    }
    rt.registry.workflow(name)
    if key is None:
        new = new_execution(rt, name, None, encoded, **extra)
        with rt.store.write() as txn:
            return StartOutcome(insert(rt, txn, new), started_fresh=True)
    with rt.store.write() as txn:
        plan = plan_start(txn.runs_of_key(name, key), policy)
        if plan.action == "attach" and plan.prior is not None:
            return StartOutcome(ExecutionId(plan.prior.exec_id), started_fresh=False)
        if plan.action == "refuse":
            raise refused(name, key, plan.prior, policy)
        new = new_execution(rt, name, key, encoded, **extra)
        exec_id = apply_fresh(rt, txn, plan, new, REPLACED_BY_START, rt.clock.now())
        return StartOutcome(exec_id, started_fresh=True)


def start_with_id(
    rt: SqliteRuntime, name: str, workflow_id: str, input: Any
) -> ExecutionId:
    """AllowDuplicate: attach to the RUNNING run of (name, id), else start a fresh one.

    The attached call's input is discarded, so a retried webhook does not
    repeat side effects. A blank id has no reuse key: always a fresh run.
    """
    check_name(workflow_id, "workflow id")
    outcome = start_with_policy(
        rt, name, workflow_id, input, WorkflowIdReusePolicy.ALLOW_DUPLICATE
    )
    return outcome.exec_id


def start_with_options(
    rt: SqliteRuntime, name: str, input: Any, options: StartOptions
) -> StartOutcome:
    """Start with a memo, first search attributes and a reuse policy."""
    if not isinstance(options, StartOptions):
        raise TypeError(
            f"start_workflow_with_options needs StartOptions, got {options!r}"
        )
    return start_with_policy(
        rt,
        name,
        options.workflow_id,
        input,
        options.reuse_policy,
        memo=options.memo,
        search_attributes=options.search_attributes,
    )
