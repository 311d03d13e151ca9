"""Where a running run is blocked and where its coroutines stand, replayed to the frontier.

The runtime side of "why is my workflow stuck?": a fresh replay of the
stored history with the registered code (never the decider's cached
instance, which must not advance), read, then closed. Nothing is written.
The store adds what only it knows: a mutex waiter's place in its queue and
the deadline of each armed timer row.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from harvest_engine.errors import ExecutionNotFound, HarvestError
from harvest_engine.runtime.talking.frontier import ReplayBroke, replay
from harvest_engine.workflow.stack import CoroutineStack, coroutine_stacks
from harvest_engine.workflow.waits import RunWait, run_waits

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_engine.clock import Clock
    from harvest_engine.events import HistoryEvent
    from harvest_engine.runtime.registry import Registry
    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.workflow.instance import WorkflowInstance


def where_waiting(
    store: DurableStore, registry: Registry, clock: Clock, exec_id: str
) -> tuple[RunWait, ...]:
    """What the run waits on now; empty for a run that has ended."""
    waits: tuple[RunWait, ...] = _at_frontier(
        store, registry, clock, exec_id, lambda i, events: run_waits(i, events)
    )
    if not waits:
        return waits
    places = {row.key: row.ahead for row in store.mutexes(exec_id)}
    deadlines = {row.timer_id: row.fire_at for row in store.timers(exec_id)}
    out: list[RunWait] = []
    for wait in waits:
        if wait.kind == "mutex" and wait.name in places:
            wait = dataclasses.replace(wait, ahead=places[wait.name])
        elif wait.kind == "timer" and wait.name in deadlines:
            wait = dataclasses.replace(wait, due_at=deadlines[wait.name])
        out.append(wait)
    return tuple(out)


def stack(
    store: DurableStore, registry: Registry, clock: Clock, exec_id: str
) -> tuple[CoroutineStack, ...]:
    """Each workflow coroutine's place in the user's code now; empty for a run that has ended."""
    stacks: tuple[CoroutineStack, ...] = _at_frontier(
        store, registry, clock, exec_id, lambda i, _events: coroutine_stacks(i)
    )
    return stacks


def _at_frontier(
    store: DurableStore,
    registry: Registry,
    clock: Clock,
    exec_id: str,
    read: Callable[[WorkflowInstance, list[HistoryEvent]], Any],
) -> Any:
    row = store.execution(exec_id)
    if row is None:
        raise ExecutionNotFound(exec_id=exec_id)
    if row.state != "RUNNING":
        return ()
    info = registry.workflow(row.workflow_name)
    events = store.load_events(exec_id)
    try:
        instance = replay(row, events, info, clock.now())
    except ReplayBroke as broke:
        if isinstance(broke.error, HarvestError):
            raise broke.error from broke
        raise HarvestError(
            f"the replay of run {exec_id} raised {broke}: its code fails before it parks"
        ) from broke.error
    try:
        return read(instance, events)
    finally:
        instance.close()
