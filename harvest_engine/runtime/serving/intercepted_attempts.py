"""An activity attempt's body run through the interceptors' activity hooks, with its headers."""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any

from harvest_engine.activity import AttemptResult, error_info, run_attempt
from harvest_engine.errors import HarvestInternalError
from harvest_engine.interceptors import ACTIVITY, START, ActivityCall, chained
from harvest_engine.runtime.deciding.headers import stored_headers

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from harvest_engine.attempt_cancel import AttemptCancel
    from harvest_engine.runtime.header_memory import HeaderMemory
    from harvest_engine.runtime.registry import RegisteredActivity, Registry
    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.store.rows import TaskRecord


def task_headers(
    store: DurableStore, memory: HeaderMemory, task: TaskRecord
) -> dict[str, str]:
    """The headers stored with the task's activity, else with its run's start.

    An activity this process scheduled has them in `memory` (no read).
    """
    known = memory.take_activity(task.exec_id, task.activity_id)
    if known is not None:
        return known
    text = store.headers_of(task.exec_id, ACTIVITY, str(task.activity_id))
    if text is not None:
        return stored_headers(text)
    exec_id = task.exec_id
    return memory.start(
        exec_id, lambda: stored_headers(store.headers_of(exec_id, START, ""))
    )


async def attempt(
    registry: Registry,
    store: DurableStore,
    task: TaskRecord,
    workflow_name: Callable[[], str],
    body: tuple[RegisteredActivity, tuple[Any, ...]],
    limits: tuple[float | None, AttemptCancel],
    started: datetime,
) -> AttemptResult:
    """One attempt of `body` (the activity and its arguments): through the hooks when any are given."""
    activity, args = body
    hooks = registry.interceptors.activity
    if not hooks:
        budget, cancel = limits
        return await run_attempt(activity.body, args, budget=budget, cancel=cancel)
    return await run(
        hooks,
        store,
        registry.header_memory,
        task,
        workflow_name(),
        activity,
        args,
        limits,
        started,
    )


async def run(
    hooks: tuple[Callable[..., Any], ...],
    store: DurableStore,
    memory: HeaderMemory,
    task: TaskRecord,
    workflow_name: str,
    activity: RegisteredActivity,
    args: tuple[Any, ...],
    limits: tuple[float | None, AttemptCancel],
    started: datetime,
) -> AttemptResult:
    """`run_attempt` inside the hooks; a sync body runs in the hooks' context (a current span).

    `limits` is the attempt's budget and its cancel (attempt_cancel.py).
    """
    budget, cancel = limits
    call = ActivityCall(
        exec_id=task.exec_id,
        workflow_name=workflow_name,
        activity_name=task.activity_name,
        activity_id=task.activity_id,
        attempt=task.attempt,
        input=args[-1] if args else None,
        ready_at=task.ready_at,
        started_at=started,
        headers=task_headers(store, memory, task),
    )
    ran: list[bool] = []

    async def final(call: ActivityCall) -> AttemptResult:
        del call
        ran.append(True)
        return await run_attempt(
            activity.body,
            args,
            budget=budget,
            cancel=cancel,
            context=contextvars.copy_context(),
        )

    try:
        result = await chained(hooks, final)(call)
    except Exception as exc:  # noqa: BLE001 - a hook's bug fails the attempt, as the body's would
        return AttemptResult(ok=False, error=error_info(exc))
    if not ran or not isinstance(result, AttemptResult):
        error = HarvestInternalError(
            f"an activity hook of {task.activity_name} did not return proceed's result"
        )
        return AttemptResult(ok=False, error=error_info(error))
    return result
