"""A decision cycle run through the interceptors' decision hooks, with its headers carried."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from harvest_engine import payloads
from harvest_engine.errors import HarvestInternalError
from harvest_engine.interceptors import (
    START,
    DecisionCall,
    DecisionResult,
    carrying,
    chained,
    checked_headers,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.runtime.deciding.cycle import Decision
    from harvest_engine.states import RunState
    from harvest_engine.store.rows import ExecutionRecord
    from harvest_engine.store.txn_protocol import WriteTxn


def stored_headers(text: str | None) -> dict[str, str]:
    """Headers as a row holds them (JSON text); {} for none or a damaged row."""
    if not text:
        return {}
    try:
        value = payloads.loads(text)
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


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
