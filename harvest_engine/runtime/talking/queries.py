"""Queries: answer from a run's state at its frontier, replayed in memory; nothing is written.

`query()` reads the run's row and history when it is called and returns a
coroutine that owns that snapshot, the handlers known at that moment and
the query timeout of that moment ("the returned future borrows
nothing ... a later set_query_timeout does not change it"). Awaiting it
replays the snapshot in a fresh instance and calls the handler. It appends
no event, changes no row, delivers no staged signal, fires no timer and runs
no activity body.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.authoring import HandlerInfo, WorkflowInfo
from harvest_engine.errors import (
    ExecutionNotFound,
    HarvestError,
    PayloadNotJson,
    PayloadTooDeep,
    QueryFailed,
    QueryNotFound,
    QueryTimedOut,
)
from harvest_engine.events import HistoryEvent
from harvest_engine.names import check_name
from harvest_engine.runtime.talking import hooked
from harvest_engine.runtime.talking.frontier import (
    ReplayBroke,
    describe_error,
    first_param_type,
    replay,
    takes_arg,
)
from harvest_engine.store.rows import ExecutionRecord

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from harvest_engine.clock import Clock
    from harvest_engine.runtime.engine import Engine


@dataclass(frozen=True)
class QuerySnapshot:
    """Everything a query needs, read when the query was made."""

    row: ExecutionRecord
    events: list[HistoryEvent]
    info: WorkflowInfo
    declarative: dict[str, HandlerInfo] = field(default_factory=dict)
    timeout: float = 5.0
    read_at: datetime | None = None


def query(
    engine: Engine, exec_id: str, name: str, arg: Any
) -> Coroutine[Any, Any, Any]:
    """Read the run now; the returned coroutine answers `name(arg)` when awaited.

    A read error (ExecutionNotFound, UnknownWorkflow) is raised by the
    coroutine, so ``await engine.query(...)`` and a task made from it both see it.
    """
    try:
        check_name(name, "query name")
        snapshot = take_snapshot(engine, exec_id)
        arg = payloads.check_value(arg, "query argument")
    except HarvestError as exc:
        return failing(exc)
    return _answer(
        engine.registry.interceptors.query, snapshot, engine.clock, name, arg
    )


def take_snapshot(engine: Engine, exec_id: str) -> QuerySnapshot:
    """The run's row, history and handlers, as of now."""
    row = engine.store.execution(exec_id)
    if row is None:
        raise ExecutionNotFound(exec_id=exec_id)
    events = engine.store.load_events(exec_id)
    info = engine.registry.workflow(row.workflow_name)
    declarative = {
        handler_name: handler
        for (workflow_name, handler_name), handler in engine.registry.queries.items()
        if workflow_name == row.workflow_name
    }
    return QuerySnapshot(
        row=row,
        events=events,
        info=info,
        declarative=declarative,
        timeout=engine.settings.query_timeout,
        read_at=engine.clock.now(),
    )


async def failing(error: HarvestError) -> Any:
    """A coroutine that raises `error` when awaited (a query whose read failed)."""
    raise error


async def _answer(
    hooks: tuple[Callable[..., Any], ...],
    snapshot: QuerySnapshot,
    clock: Clock,
    name: str,
    arg: Any,
) -> Any:
    return hooked_answer(hooks, snapshot, clock, name, arg)


def hooked_answer(
    hooks: tuple[Callable[..., Any], ...],
    snapshot: QuerySnapshot,
    clock: Clock,
    name: str,
    arg: Any,
) -> Any:
    """`answer` through the interceptors' query hooks (none: the bare answer)."""
    return hooked.query(
        hooks,
        snapshot.row.exec_id,
        name,
        arg,
        lambda name, arg: answer(snapshot, clock, name, arg),
    )


def answer(snapshot: QuerySnapshot, clock: Clock, name: str, arg: Any) -> Any:
    """Replay the snapshot and call the query handler `name` (the body's wins)."""
    row = snapshot.row
    started = clock.now()
    try:
        instance = replay(
            row, snapshot.events, snapshot.info, snapshot.read_at or started
        )
    except ReplayBroke as broke:
        raise QueryFailed(
            exec_id=row.exec_id, name=name, error=f"the run's replay raised {broke}"
        ) from broke.error
    try:
        call = _handler_call(snapshot, instance.queries, instance.ctx, name, arg)
        before = instance.violation
        try:
            task = instance.run_handler(call)
        except Exception as exc:
            # Raised on the loop outside the handler's task: a callback it
            # scheduled, or a signal handler it woke, failed.
            raise QueryFailed(
                exec_id=row.exec_id, name=name, error=describe_error(exc)
            ) from exc
        if instance.violation is not None and instance.violation is not before:
            raise QueryFailed(
                exec_id=row.exec_id, name=name, error=describe_error(instance.violation)
            )
        if not task.done():
            task.cancel()
            # It waits on something only a later event could resolve: no
            # replay of this snapshot will ever finish it.
            raise QueryTimedOut(
                exec_id=row.exec_id, name=name, seconds=snapshot.timeout
            )
        error = task.exception()
        if error is not None:
            raise QueryFailed(
                exec_id=row.exec_id, name=name, error=describe_error(error)
            ) from error
        try:
            result = payloads.to_json(task.result(), "query result")
        except (PayloadNotJson, PayloadTooDeep) as exc:
            raise QueryFailed(
                exec_id=row.exec_id, name=name, error=f"the result is not JSON: {exc}"
            ) from exc
    finally:
        instance.close()
    if (clock.now() - started).total_seconds() > snapshot.timeout:
        raise QueryTimedOut(exec_id=row.exec_id, name=name, seconds=snapshot.timeout)
    return result


def _handler_call(
    snapshot: QuerySnapshot,
    body_handlers: dict[str, Callable[..., Any]],
    ctx: Any,
    name: str,
    arg: Any,
) -> Callable[[], Any]:
    """The call that runs the handler: a body handler `fn()` / `fn(arg)`, or `fn(ctx, arg)`."""
    handler = body_handlers.get(name)
    if handler is not None:
        if not takes_arg(handler):
            return handler
        value = _converted(snapshot, name, arg, first_param_type(handler))
        return lambda: handler(value)
    declared = snapshot.declarative.get(name)
    if declared is not None:
        value = _converted(snapshot, name, arg, declared.input_type)
        return lambda: declared.fn(ctx, value)
    known = sorted(set(body_handlers) | set(snapshot.declarative))
    raise QueryNotFound(
        exec_id=snapshot.row.exec_id, name=name, known=", ".join(known) or "none"
    )


def _converted(snapshot: QuerySnapshot, name: str, arg: Any, hint: Any) -> Any:
    """The argument as the handler's annotated type; QueryFailed when it does not fit."""
    try:
        return payloads.from_json(arg, hint)
    except (TypeError, ValueError) as exc:
        raise QueryFailed(
            exec_id=snapshot.row.exec_id,
            name=name,
            error=f"the argument does not fit: {exc}",
        ) from exc
