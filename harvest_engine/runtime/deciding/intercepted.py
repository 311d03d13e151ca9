"""A decision cycle run through the interceptors' decision hooks, with its headers carried."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from harvest_engine.errors import HarvestInternalError
from harvest_engine.interceptors import (
    START,
    DecisionCall,
    DecisionResult,
    carrying,
    chained,
    checked_headers,
)
from harvest_engine.runtime.deciding.headers import stored_headers

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.runtime.deciding.cycle import Decision
    from harvest_engine.states import RunState
    from harvest_engine.store.rows import ExecutionRecord
    from harvest_engine.store.txn_protocol import WriteTxn


def decide(
    hooks: tuple[Callable[..., object], ...],
    txn: WriteTxn,
    row: ExecutionRecord,
    first: bool,
    run: Callable[[], Decision],
) -> Decision:
    """`run()` (the cycle) inside the hooks; what it schedules carries the hooks' `outbound`."""
    headers = stored_headers(txn.headers(row.exec_id, START, ""))
    call = DecisionCall(
        exec_id=row.exec_id,
        workflow_name=row.workflow_name,
        workflow_id=row.workflow_id,
        attempt=row.attempt,
        first=first,
        headers=headers,
        outbound=dict(headers),
        signal_headers=[
            stored_headers(text) for text in txn.staged_signal_headers(row.exec_id)
        ],
    )
    made: list[Decision] = []

    def final(call: DecisionCall) -> DecisionResult:
        with carrying(checked_headers(call.outbound)):
            decision = run()
        made.append(decision)
        return DecisionResult(
            exec_id=row.exec_id,
            state=state_name(decision.state) if decision.terminal else None,
            progressed=decision.progressed,
        )

    chained(hooks, final)(call)
    if not made:
        raise HarvestInternalError(
            f"a decision hook of run {row.exec_id} returned without calling proceed"
        )
    return made[-1]


def state_name(state: RunState | None) -> str | None:
    """A RunState's stored name: RunState.ContinuedAsNew -> "CONTINUED_AS_NEW"."""
    if state is None:
        return None
    name = type(state).__name__.rsplit(".", 1)[-1].lstrip("_")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()
