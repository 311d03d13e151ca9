"""Signal-with-start: start a run and signal it, or signal the run that exists, in one transaction.

One write transaction holds the key probe, the start decision, any start or
replace, and the signal stage; an error rolls back all of them.
The next drive appends the signal to the run's history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvest_engine.names import check_name
from harvest_engine.runtime.start_inputs import checked_input
from harvest_engine.runtime.talking.signals import (
    chain_key_holder,
    check_signal,
    check_workflow_id,
    encoded_payload,
)
from harvest_engine.runtime.talking.start_calls import (
    apply_fresh,
    new_execution,
    refused,
)
from harvest_engine.runtime.talking.starts import (
    WorkflowIdReusePolicy,
    plan_signal_with_start,
)
from harvest_engine.states import ExecutionId

if TYPE_CHECKING:
    from harvest_engine.runtime.engine import Engine

# The WorkflowCancelled reason of a RUNNING prior this call replaces (the Postgres text).
REPLACED_BY_SIGNAL_WITH_START = "terminated by signal-with-start"


@dataclass(frozen=True)
class SignalWithStart:
    """A signal-with-start request.

    Attributes:
        workflow_name: the registered workflow to start (when a start happens).
        workflow_id: the business id (required, not blank).
        input: the start input; checked and used only when the call starts a run.
        reuse_policy: the start matrix to apply (see `WorkflowIdReusePolicy`).
        signal_name: the signal to stage (required, not blank).
        signal_payload: its JSON payload.
        idempotency_key: a key deduped across every run of the workflow id;
            None or "" for no key.
    """

    workflow_name: str
    workflow_id: str
    input: Any = None
    reuse_policy: WorkflowIdReusePolicy = WorkflowIdReusePolicy.ALLOW_DUPLICATE
    signal_name: str = ""
    signal_payload: Any = None
    idempotency_key: str | None = None


@dataclass(frozen=True)
class SignalWithStartOutcome:
    """What a signal-with-start did.

    Attributes:
        exec_id: the run that holds the signal (or its key).
        started_fresh: True when this call started that run.
        signal_delivered: True when this call staged the signal; False when a
            run of the workflow id already held its key.
    """

    exec_id: ExecutionId
    started_fresh: bool
    signal_delivered: bool


def signal_with_start(
    engine: Engine, request: SignalWithStart
) -> SignalWithStartOutcome:
    """Carry out `request` (see `SqliteRuntime.signal_with_start`)."""
    if not isinstance(request, SignalWithStart):
        raise TypeError(f"signal_with_start needs a SignalWithStart, got {request!r}")
    policy = WorkflowIdReusePolicy.coerce(request.reuse_policy)
    workflow_id = check_workflow_id(request.workflow_id)
    key = check_signal(request.signal_name, request.idempotency_key)
    name = check_name(request.workflow_name, "workflow name")
    now = engine.clock.now()
    with engine.store.write() as txn:
        runs = txn.runs_of_key(name, workflow_id)
        if key is not None:
            holder = chain_key_holder(txn, runs, key)
            if holder is not None:
                return SignalWithStartOutcome(
                    exec_id=ExecutionId(holder),
                    started_fresh=False,
                    signal_delivered=False,
                )
        plan = plan_signal_with_start(runs, policy, now)
        if plan.action == "refuse":
            raise refused(name, workflow_id, plan.prior, policy)
        payload = encoded_payload(request.signal_payload)
        if plan.action == "attach" and plan.prior is not None:
            target = plan.prior.exec_id
            started = False
        else:
            new = new_execution(engine, name, workflow_id, checked_input(request.input))
            target = str(
                apply_fresh(engine, txn, plan, new, REPLACED_BY_SIGNAL_WITH_START, now)
            )
            started = True
        staged = txn.stage_signal(target, request.signal_name, payload, key, now)
        return SignalWithStartOutcome(
            exec_id=ExecutionId(target), started_fresh=started, signal_delivered=staged
        )
