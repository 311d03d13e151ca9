"""Update-with-start: start (or attach to) a run and run an update against it, in one transaction.

The start, the new run's first decision and the update's events commit
together. Each is atomic on its own inside
that transaction: an update that is rejected, invalid or fails rolls back
alone, so the started run stays and the caller gets the update's typed error.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from harvest_engine.calls import (
    UpdateWithStart,
    UpdateWithStartOutcome,
    check_request,
)
from harvest_engine.errors import HarvestError
from harvest_engine.runtime.talking import start_calls, updates

if TYPE_CHECKING:
    from harvest_engine.runtime.engine import Engine

log = logging.getLogger("harvest_engine.runtime")


def update_with_start(
    engine: Engine, request: UpdateWithStart
) -> UpdateWithStartOutcome:
    """Carry out `request` (see `Runtime.update_with_start`)."""
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
