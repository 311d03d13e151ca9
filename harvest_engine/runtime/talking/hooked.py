"""Calls into runs passed through the interceptors' hooks, their headers carried to the store.

Each helper takes the call's plain carrying-out (`go`) and runs it bare when
no interceptor hooks that kind of call; else it builds the call's record
(its headers start as those the call arrived with: a client command's) and
runs `go` inside the chain, carrying the headers the hooks leave, so a
start stores them with its run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from harvest_engine.interceptors import (
    QueryCall,
    SignalCall,
    StartCall,
    UpdateCall,
    carried,
    carrying,
    chained,
    checked_headers,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.runtime.engine import Engine

R = TypeVar("R")


def start(
    engine: Engine,
    name: str,
    workflow_id: str | None,
    input: Any,
    go: Callable[[], R],
) -> R:
    """A start through the start hooks."""
    hooks = engine.registry.interceptors.start
    if not hooks:
        return go()
    call = StartCall(name, workflow_id, input, dict(carried() or {}))

    def final(call: StartCall) -> R:
        with carrying(checked_headers(call.headers)):
            return go()

    result: R = chained(hooks, final)(call)
    return result


def signal(
    engine: Engine,
    exec_id: str | None,
    workflow_id: str | None,
    name: str,
    payload: Any,
    go: Callable[[], R],
) -> R:
    """A signal through the signal hooks."""
    hooks = engine.registry.interceptors.signal
    if not hooks:
        return go()
    call = SignalCall(exec_id, workflow_id, name, payload, dict(carried() or {}))

    def final(call: SignalCall) -> R:
        with carrying(checked_headers(call.headers)):
            return go()

    result: R = chained(hooks, final)(call)
    return result


def query(
    hooks: tuple[Callable[..., Any], ...],
    exec_id: str,
    name: str,
    arg: Any,
    go: Callable[[str, Any], Any],
) -> Any:
    """A query's answer through the query hooks (`go(name, arg)` answers)."""
    if not hooks:
        return go(name, arg)
    call = QueryCall(exec_id, name, arg, dict(carried() or {}))
    return chained(hooks, lambda call: go(call.name, call.arg))(call)


def update(
    engine: Engine,
    exec_id: str,
    name: str,
    arg: Any,
    go: Callable[[str, Any], Any],
) -> Any:
    """An update through the update hooks (`go(name, arg)` runs and records it)."""
    hooks = engine.registry.interceptors.update
    if not hooks:
        return go(name, arg)
    call = UpdateCall(exec_id, name, arg, dict(carried() or {}))

    def final(call: UpdateCall) -> Any:
        with carrying(checked_headers(call.headers)):
            return go(call.name, call.arg)

    return chained(hooks, final)(call)
