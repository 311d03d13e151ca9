"""Calls that talk to runs: starts, signals, queries and updates, each over the Engine.

`Runtime`'s calls of the same names are one line into these (their docs are
the facade's); client commands applied by the serving loop call them too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from harvest_engine.calls import StartOptions, WorkflowIdReusePolicy
from harvest_engine.errors import ExecutionNotFound, InvalidSignal
from harvest_engine.names import check_name
from harvest_engine.runtime.engine import id_text
from harvest_engine.runtime.talking import (
    held_starts,
    hooked,
    queries,
    signals,
    start_calls,
    updates,
)
from harvest_engine.runtime.talking import signal_with_start as signal_start
from harvest_engine.runtime.talking import update_with_start as update_start

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from harvest_engine.calls import (
        SignalDelivery,
        SignalWithStart,
        SignalWithStartOutcome,
        StartOutcome,
        UpdateWithStart,
        UpdateWithStartOutcome,
    )
    from harvest_engine.runtime.engine import Engine
    from harvest_engine.states import ExecutionId


R = TypeVar("R")


def start_workflow(engine: Engine, name: str, input: Any = None) -> ExecutionId:
    """Start a fresh run; nothing executes until a drive."""
    held = held_starts.holds(engine, name)  # debounce / batch (held_starts.py)
    return _started(
        engine,
        name,
        None,
        input,
        lambda: (
            held_starts.start(engine, name, None, input).exec_id
            if held
            else start_calls.start_fresh(engine, name, None, input)
        ),
    )


def start_workflow_with_id(
    engine: Engine, name: str, workflow_id: str, input: Any = None
) -> ExecutionId:
    """Start with a business id, attaching to a RUNNING run of the same name and id."""
    held = held_starts.holds(engine, name)
    if held:
        check_name(workflow_id, "workflow id")
    return _started(
        engine,
        name,
        workflow_id,
        input,
        lambda: (
            held_starts.start(engine, name, workflow_id, input).exec_id
            if held
            else start_calls.start_with_id(engine, name, workflow_id, input)
        ),
    )


def send_signal(
    engine: Engine, exec_id: str | ExecutionId, name: str, payload: Any = None
) -> None:
    """Stage a signal for a RUNNING run; the next drive appends it to history."""
    _signal(engine, exec_id, name, payload, None)
    engine.waker.wake()


def _signal(
    engine: Engine,
    exec_id: str | ExecutionId,
    name: str,
    payload: Any,
    key: str | None,
) -> bool:
    """`signals.send_signal`; its transaction's read of the row finds an unknown run."""
    text = id_text(exec_id)
    try:
        return hooked.signal(
            engine,
            text,
            None,
            name,
            payload,
            lambda: signals.send_signal(
                engine.store, text, name, payload, key, engine.clock.now()
            ),
        )
    except InvalidSignal:
        engine.require(text)  # an unknown run is reported first, as it was
        raise


def start_workflow_with_reuse_policy(
    engine: Engine,
    name: str,
    workflow_id: str,
    input: Any,
    policy: WorkflowIdReusePolicy,
) -> StartOutcome:
    """Start under a workflow-id reuse policy; whether it attached or started fresh."""
    if held_starts.holds(engine, name):
        WorkflowIdReusePolicy.coerce(policy)  # checked, not consulted
        return engine.woken(
            hooked.start(
                engine,
                name,
                workflow_id,
                input,
                lambda: held_starts.start(engine, name, workflow_id, input),
            )
        )
    return _started(
        engine,
        name,
        workflow_id,
        input,
        lambda: start_calls.start_with_policy(engine, name, workflow_id, input, policy),
    )


def start_workflow_with_options(
    engine: Engine, name: str, input: Any, options: StartOptions
) -> StartOutcome:
    """Start with `StartOptions(workflow_id=, memo=, search_attributes=, reuse_policy=)`."""
    workflow_id = getattr(options, "workflow_id", None)
    if isinstance(options, StartOptions) and held_starts.holds(engine, name):
        WorkflowIdReusePolicy.coerce(options.reuse_policy)
        return engine.woken(
            hooked.start(
                engine,
                name,
                workflow_id,
                input,
                lambda: held_starts.start(
                    engine,
                    name,
                    options.workflow_id,
                    input,
                    memo=options.memo,
                    search_attributes=options.search_attributes,
                ),
            )
        )
    return _started(
        engine,
        name,
        workflow_id,
        input,
        lambda: start_calls.start_with_options(engine, name, input, options),
    )


def signal_with_start(
    engine: Engine, request: SignalWithStart
) -> SignalWithStartOutcome:
    """Signal the RUNNING run of the id, or start one and signal it, in one transaction."""
    return engine.woken(
        hooked.start(
            engine,
            request.workflow_name,
            request.workflow_id,
            request.input,
            lambda: signal_start.signal_with_start(engine, request),
        )
    )


def send_signal_idempotent(
    engine: Engine,
    exec_id: str | ExecutionId,
    name: str,
    payload: Any,
    key: str | None,
) -> bool:
    """Stage a keyed signal; False when this run already holds `key` (also after it ended)."""
    return engine.woken(_signal(engine, exec_id, name, payload, key))


def send_signal_by_workflow_id(
    engine: Engine,
    workflow_name: str,
    workflow_id: str,
    name: str,
    payload: Any = None,
    key: str | None = None,
) -> SignalDelivery:
    """Signal the RUNNING run of (workflow_name, workflow_id); where it went."""
    return engine.woken(
        hooked.signal(
            engine,
            None,
            workflow_id,
            name,
            payload,
            lambda: signals.send_signal_by_workflow_id(
                engine.store,
                workflow_name,
                workflow_id,
                name,
                payload,
                key,
                engine.clock.now(),
            ),
        )
    )


def query(
    engine: Engine, exec_id: str | ExecutionId, name: str, arg: Any = None
) -> Coroutine[Any, Any, Any]:
    """Await the answer of query handler `name` at the run's frontier; writes nothing."""
    try:
        text = engine.require(exec_id)
    except ExecutionNotFound as exc:
        return queries.failing(exc)
    return queries.query(engine, text, name, arg)


async def update(
    engine: Engine, exec_id: str | ExecutionId, name: str, arg: Any = None
) -> Any:
    """Run update `name(arg)`: validated, then recorded with its result in one transaction."""
    return engine.woken(
        await updates.update(engine, engine.require(exec_id), name, arg)
    )


async def update_with_start(
    engine: Engine, request: UpdateWithStart
) -> UpdateWithStartOutcome:
    """Start (or attach to) the run of the id and run an update on it, in one transaction."""
    return engine.woken(
        hooked.start(
            engine,
            request.workflow_name,
            request.workflow_id,
            request.input,
            lambda: update_start.update_with_start(engine, request),
        )
    )


def _started(
    engine: Engine,
    name: str,
    workflow_id: str | None,
    input: Any,
    go: Callable[[], R],
) -> R:
    """A start through the start hooks (hooked.py), then the server woken for it."""
    return engine.woken(hooked.start(engine, name, workflow_id, input, go))
