"""Update-with-start: start (or attach to) a run and run an update against it, in one transaction.

The start, the new run's first decision and the update's events commit
together. Each is atomic on its own inside
that transaction: an update that is rejected, invalid or fails rolls back
alone, so the started run stays and the caller gets the update's typed error.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import HarvestError, UpdateRejected
from harvest_engine.names import check_name
from harvest_engine.runtime.start_inputs import checked_input
from harvest_engine.runtime.talking import start_calls, updates
from harvest_engine.runtime.talking.signals import check_workflow_id
from harvest_engine.runtime.talking.starts import WorkflowIdReusePolicy
from harvest_engine.states import ExecutionId

if TYPE_CHECKING:
    from harvest_engine.runtime.engine import Engine

log = logging.getLogger("harvest_engine.runtime")


@dataclass(frozen=True)
class UpdateWithStart:
    """An update-with-start request.

    Attributes:
        workflow_name: the registered workflow to start (when a start happens).
        workflow_id: the business id (required, not blank): the run to attach to.
        input: the start input; checked and used only when the call starts a run.
        update_name: the update handler to run (required, not blank).
        update_arg: its JSON argument.
        reuse_policy: the start matrix to apply (see `WorkflowIdReusePolicy`).
    """

    workflow_name: str
    workflow_id: str
    input: Any = None
    update_name: str = ""
    update_arg: Any = None
    reuse_policy: WorkflowIdReusePolicy = WorkflowIdReusePolicy.ALLOW_DUPLICATE


@dataclass(frozen=True)
class UpdateWithStartOutcome:
    """What an update-with-start did.

    Attributes:
        exec_id: the run the update ran against.
        started_fresh: True when this call started that run.
        result: the update handler's JSON result.
    """

    exec_id: ExecutionId
    started_fresh: bool
    result: Any


def check_request(request: Any) -> UpdateWithStart:
    """Refuse a malformed request before anything is written (also in a client)."""
    if not isinstance(request, UpdateWithStart):
        raise TypeError(f"update_with_start needs an UpdateWithStart, got {request!r}")
    WorkflowIdReusePolicy.coerce(request.reuse_policy)
    check_name(request.workflow_name, "workflow name")
    check_workflow_id(request.workflow_id)
    name = request.update_name
    if not isinstance(name, str) or not name.strip():
        raise UpdateRejected(
            name=repr(name)[:80], reason="an update name is non-empty text"
        )
    check_name(name, "update name")
    checked_input(request.input)
    payloads.check(request.update_arg, "update input")
    return request


def update_with_start(
    engine: Engine, request: UpdateWithStart
) -> UpdateWithStartOutcome:
    """Carry out `request` (see `SqliteRuntime.update_with_start`)."""
    request = check_request(request)
    failure: HarvestError | None = None
    with engine.store.write_together():
        outcome = start_calls.start_with_policy(
            engine,
            request.workflow_name,
            request.workflow_id,
            request.input,
            request.reuse_policy,
        )
        exec_id = str(outcome.exec_id)
        if outcome.started_fresh:
            _first_decision(engine, exec_id)
        try:
            result = updates.run_update(
                engine, exec_id, request.update_name, request.update_arg
            )
        except HarvestError as exc:
            failure = exc  # the update rolled back alone; the start commits
    if failure is not None:
        raise failure
    return UpdateWithStartOutcome(outcome.exec_id, outcome.started_fresh, result)


def _first_decision(engine: Engine, exec_id: str) -> None:
    """Run the new run's body to its first wait, so the update meets its handlers.

    A failing first decision rolls back alone and stays the run's business:
    the run keeps its decision flag and the next drive (or the serving loop)
    meets the error again and reports it.
    """
    try:
        engine.decider.decide(exec_id, engine.clock.now())
    except HarvestError as exc:
        log.warning(
            "update_with_start: the first decision of %s failed: %s", exec_id, exc
        )
