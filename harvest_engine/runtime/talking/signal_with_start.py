"""Signal-with-start: start a run and signal it, or signal the run that exists, in one transaction.

One write transaction holds the key probe, the start decision, any start or
replace, and the signal stage; an error rolls back all of them.
The next drive appends the signal to the run's history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.calls import (
    SignalWithStart,
    SignalWithStartOutcome,
    WorkflowIdReusePolicy,
    check_signal,
    check_workflow_id,
    checked_input,
    encoded_payload,
)
from harvest_engine.names import check_name
from harvest_engine.runtime.deciding import headers
from harvest_engine.runtime.talking.signals import chain_key_holder
from harvest_engine.runtime.talking.start_calls import (
    apply_fresh,
    new_execution,
    refused,
)
from harvest_engine.runtime.talking.starts import plan_signal_with_start
from harvest_engine.states import ExecutionId

if TYPE_CHECKING:
    from harvest_engine.runtime.engine import Engine

# The WorkflowCancelled reason of a RUNNING prior this call replaces (the Postgres text).
REPLACED_BY_SIGNAL_WITH_START = "terminated by signal-with-start"


def signal_with_start(
    engine: Engine, request: SignalWithStart
) -> SignalWithStartOutcome:
    """Carry out `request` (see `Runtime.signal_with_start`)."""
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
            cap = engine.registry.shaping_of(name).max_input_bytes
            new = new_execution(
                engine, name, workflow_id, checked_input(request.input, cap)
            )
            target = str(
                apply_fresh(engine, txn, plan, new, REPLACED_BY_SIGNAL_WITH_START, now)
            )
            started = True
        staged = txn.stage_signal(
            target, request.signal_name, payload, key, now, headers.signal_text()
        )
        return SignalWithStartOutcome(
            exec_id=ExecutionId(target), started_fresh=started, signal_delivered=staged
        )
