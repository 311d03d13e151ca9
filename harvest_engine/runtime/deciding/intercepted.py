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
from harvest_engine.runtime.deciding.cycle import Panic
from harvest_engine.runtime.deciding.headers import stored_headers
from harvest_engine.runtime.deciding.run_ends import deciding

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.runtime.deciding.cycle import Decision
    from harvest_engine.runtime.header_memory import HeaderMemory
    from harvest_engine.states import RunState
    from harvest_engine.store.rows import ExecutionRecord
    from harvest_engine.store.txn_protocol import WriteTxn


def decide(
    hooks: tuple[Callable[..., object], ...],
    txn: WriteTxn,
    row: ExecutionRecord,
    first: bool,
    memory: HeaderMemory,
    run: Callable[[], Decision],
) -> Decision:
    """`run()` (the cycle) inside the hooks; what it schedules carries the hooks' `outbound`."""
    headers = memory.start(
        row.exec_id, lambda: stored_headers(txn.headers(row.exec_id, START, ""))
    )
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
    inside: list[BaseException] = []

    def final(call: DecisionCall) -> DecisionResult:
        try:
            with carrying(checked_headers(call.outbound)), deciding(row.exec_id):
                decision = run()
        except BaseException as exc:
            inside.append(exc)
            raise
        made.append(decision)
        return DecisionResult(
            exec_id=row.exec_id,
            state=state_name(decision.state) if decision.terminal else None,
            progressed=decision.progressed,
        )

    try:
        chained(hooks, final)(call)
    except Exception as exc:
        if inside and exc is inside[-1]:
            raise  # the cycle's own error, handled as without hooks
        # A hook's own bug: the cycle rolls back and counts it, like a panic.
        raise Panic(exc) from exc
    if inside:
        raise inside[-1]  # a hook swallowed the cycle's error: it still rolls back
    if not made:
        raise Panic(
            HarvestInternalError(
                f"a decision hook of run {row.exec_id} returned without calling proceed"
            )
        )
    return made[-1]


def state_name(state: RunState | None) -> str | None:
    """A RunState's stored name: RunState.ContinuedAsNew -> "CONTINUED_AS_NEW"."""
    if state is None:
        return None
    name = type(state).__name__.rsplit(".", 1)[-1].lstrip("_")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()
