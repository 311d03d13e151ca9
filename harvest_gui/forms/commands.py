"""What the forms ask of the engine, one function per action: the writer's runtime or a client (no Qt).

In writer mode an action calls the embedded runtime and returns its
result. In client mode (another process serves the file) it returns a
coroutine that sends the command through `HarvestClient` and awaits the
reply; the form awaits it (`ActionDialog.then`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvest_engine import (
    StartOptions,
    WorkflowIdReusePolicy,
    WorkflowSchedule,
)
from harvest_gui.inspect.signal_names import queries_in_code, updates_in_code

if TYPE_CHECKING:
    from collections.abc import Awaitable
    from datetime import datetime

    from harvest_engine import (
        ExecutionFilter,
        HarvestClient,
        Runtime,
        ScheduleRow,
        StartOutcome,
        WorkflowInfo,
    )

READ_ONLY_REASON = (
    "Read-only: this window opened the file without the writer lock, so nothing can be "
    "changed from here. Reopen it with File ▸ Open to act on runs."
)
CLIENT_REASON = (
    "Client mode: another process serves this file and holds its lock; schedules, "
    "purging and driving stay with that process."
)
NO_CODE_REASON = (
    "No workflows are registered in this window: load their code with File ▸ Load "
    "workflow code… (or start it with --app MODULE)."
)


def runtime_of(session: Any) -> Runtime | None:
    """The session's runtime, or None for a read-only session."""
    return (
        getattr(session, "runtime", None)
        if getattr(session, "can_write", False)
        else None
    )


def client_of(session: Any) -> HarvestClient | None:
    """The session's client of a served file, or None outside client mode."""
    return (
        getattr(session, "client", None)
        if getattr(session, "can_command", False)
        else None
    )


def code_of(session: Any) -> Runtime | None:
    """Where the session's workflow code is registered: the writer's runtime or the `--app` one."""
    return runtime_of(session) or getattr(session, "code", None)


def workflow_infos(session: Any) -> list[WorkflowInfo]:
    """The registered workflows, by name."""
    rt = code_of(session)
    if rt is None:
        return []
    return [rt.registry.workflows[name] for name in sorted(rt.registry.workflows)]


def workflow_info(session: Any, name: str) -> WorkflowInfo | None:
    """One registered workflow, or None."""
    rt = code_of(session)
    return None if rt is None else rt.registry.workflows.get(name)


@dataclass(frozen=True)
class StartRequest:
    """Everything the start form collected."""

    workflow_name: str
    input: Any = None
    workflow_id: str | None = None
    reuse_policy: WorkflowIdReusePolicy = WorkflowIdReusePolicy.ALLOW_DUPLICATE
    memo: Any = None
    search_attributes: dict[str, Any] | None = None


def start_workflow(
    session: Any, request: StartRequest
) -> StartOutcome | Awaitable[StartOutcome]:
    """Start (or attach to) a run with `start_workflow_with_options`."""
    options = StartOptions(
        workflow_id=request.workflow_id or None,
        memo=request.memo,
        search_attributes=request.search_attributes or {},
        reuse_policy=request.reuse_policy,
    )
    client = client_of(session)
    if client is not None:
        return client.start_workflow_with_options(
            request.workflow_name,
            request.input,
            options,
            timeout=_timeout(session),
            command_id=new_command_id(session),
        )
    rt = _writer(session)
    return rt.start_workflow_with_options(request.workflow_name, request.input, options)


def send_signal(
    session: Any, exec_id: str, name: str, payload: Any, key: str | None
) -> bool | Awaitable[bool]:
    """Stage a signal; with a key, False when the run already holds that key."""
    client = client_of(session)
    if client is not None:
        return _client_signal(
            client,
            exec_id,
            name,
            payload,
            key,
            _timeout(session),
            new_command_id(session),
        )
    rt = _writer(session)
    if key:
        return rt.send_signal_idempotent(exec_id, name, payload, key)
    rt.send_signal(exec_id, name, payload)
    return True


async def _client_signal(
    client: HarvestClient,
    exec_id: str,
    name: str,
    payload: Any,
    key: str | None,
    timeout: str,  # noqa: ASYNC109 -- HarvestClient's reply timeout, passed on
    command_id: str,
) -> bool:
    if key:
        return await client.send_signal_idempotent(
            exec_id, name, payload, key, timeout=timeout, command_id=command_id
        )
    await client.send_signal(
        exec_id, name, payload, timeout=timeout, command_id=command_id
    )
    return True


def new_command_id(session: Any) -> str:
    """A fresh id for one client command, kept as `session.last_command_id` for the form to show."""
    command_id = f"gui-{uuid.uuid4().hex[:16]}"
    session.last_command_id = command_id
    return command_id


def _timeout(session: Any) -> str:
    """How long a client command waits for the server's reply ("10s" unless the session says)."""
    return str(getattr(session, "client_timeout", "10s"))


async def run_query(session: Any, exec_id: str, name: str, arg: Any) -> Any:
    """Answer a query at the run's frontier (writes nothing)."""
    client = client_of(session)
    if client is not None:
        return await client.query(
            exec_id,
            name,
            arg,
            timeout=_timeout(session),
            command_id=new_command_id(session),
        )
    return await _writer(session).query(exec_id, name, arg)


async def run_update(session: Any, exec_id: str, name: str, arg: Any) -> Any:
    """Run an update (validated, recorded with its result)."""
    client = client_of(session)
    if client is not None:
        return await client.update(
            exec_id,
            name,
            arg,
            timeout=_timeout(session),
            command_id=new_command_id(session),
        )
    return await _writer(session).update(exec_id, name, arg)


RUN_ACTIONS = ("cancel", "terminate", "pause", "unpause")
"""What the end-run form and the bulk form do to a run."""


def end_run(
    session: Any, exec_id: str, action: str, reason: str
) -> Awaitable[None] | None:
    """``cancel`` (cooperative), ``terminate`` (immediate), ``pause`` or ``unpause`` one run.

    Raises:
        ExecutionNotFound, WorkflowNotRunning: from the engine.
        ValueError: `action` is neither.

    """
    if action not in RUN_ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    client = client_of(session)
    if client is not None:
        timeout, cid = _timeout(session), new_command_id(session)
        if action == "unpause":
            return client.unpause(exec_id, timeout=timeout, command_id=cid)
        call = getattr(client, action)  # cancel, terminate, pause: (exec_id, reason)
        return call(exec_id, reason, timeout=timeout, command_id=cid)  # type: ignore[no-any-return]
    rt = _writer(session)
    if action == "unpause":
        rt.unpause(exec_id)
    else:
        getattr(rt, action)(exec_id, reason)
    return None


def reset_run(session: Any, exec_id: str, to_event: int | None, reason: str) -> Any:
    """`reset` the run to `to_event` (None: the default point); the new run's id (or a coroutine)."""
    client = client_of(session)
    if client is not None:
        return client.reset(
            exec_id,
            to_event=to_event,
            reason=reason,
            timeout=_timeout(session),
            command_id=new_command_id(session),
        )
    return _writer(session).reset(exec_id, to_event=to_event, reason=reason)


def fork_run(
    session: Any, exec_id: str, from_step: int, workflow_id: str | None
) -> Any:
    """`fork` the run from `from_step`; the new run's id (or a coroutine, in client mode)."""
    client = client_of(session)
    if client is not None:
        return client.fork(
            exec_id,
            from_step=from_step,
            workflow_id=workflow_id,
            timeout=_timeout(session),
            command_id=new_command_id(session),
        )
    return _writer(session).fork(exec_id, from_step=from_step, workflow_id=workflow_id)


BULK_ACTIONS = (*RUN_ACTIONS, "reset")
"""What the bulk form does to every run a filter matches (signal has its own call)."""


def act_on_many(session: Any, action: str, flt: ExecutionFilter, reason: str) -> Any:
    """``cancel_many`` / ``terminate_many`` / ``pause_many`` / ``unpause_many`` / ``reset_many``.

    Returns how many runs changed; in client mode, a coroutine (the bulk
    command's own, longer, reply timeout).
    """
    if action not in BULK_ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    client = client_of(session)
    target: Any = client if client is not None else _writer(session)
    call = getattr(target, f"{action}_many")
    extra = {"command_id": new_command_id(session)} if client is not None else {}
    if action == "unpause":
        return call(flt, **extra)
    if action == "reset":
        return call(flt, reason=reason, **extra)
    return call(flt, reason, **extra)


def signal_many(session: Any, flt: ExecutionFilter, name: str, payload: Any) -> Any:
    """``signal_many``: every open run `flt` matches takes the signal once; how many did.

    In client mode, a coroutine (the bulk command's reply timeout).
    """
    client = client_of(session)
    if client is not None:
        return client.signal_many(
            flt, name, payload, command_id=new_command_id(session)
        )
    return _writer(session).signal_many(flt, name, payload)


def save_schedule(session: Any, schedule: WorkflowSchedule) -> ScheduleRow:
    """Create or replace the schedule of its workflow."""
    return _writer(session).upsert_schedule(schedule)


def set_schedule_paused(session: Any, workflow_name: str, paused: bool) -> bool:
    """Pause or resume; False when there is no such schedule."""
    rt = _writer(session)
    return (
        rt.pause_schedule(workflow_name)
        if paused
        else rt.resume_schedule(workflow_name)
    )


def delete_schedule(session: Any, workflow_name: str) -> bool:
    """Remove a schedule; False when there was none."""
    return _writer(session).delete_schedule(workflow_name)


def schedule_firing_reason(session: Any) -> str | None:
    """Why Trigger now / Backfill are unavailable here (read-only), or None when they are."""
    if runtime_of(session) is not None or client_of(session) is not None:
        return None
    return READ_ONLY_REASON


def trigger_schedule(session: Any, workflow_name: str) -> Any:
    """Start one run of the schedule now: its exec id, or None when its overlap policy skips.

    In client mode, a coroutine sending the command to the serving process.
    """
    client = client_of(session)
    if client is not None:
        return client.trigger_schedule(
            workflow_name, timeout=_timeout(session), command_id=new_command_id(session)
        )
    return _writer(session).trigger_schedule(workflow_name)


def backfill_schedule(
    session: Any, workflow_name: str, start: datetime, end: datetime
) -> Any:
    """Start a run for each slot from `start` to `end`: the exec ids started (or a coroutine)."""
    client = client_of(session)
    if client is not None:
        return client.backfill_schedule(
            workflow_name,
            start,
            end,
            timeout=_timeout(session),
            command_id=new_command_id(session),
        )
    return _writer(session).backfill_schedule(workflow_name, start, end)


def purge_terminal(session: Any, older_than: Any) -> int:
    """Remove finished runs closed more than `older_than` ago; how many went."""
    return _writer(session).purge_terminal(older_than)


def handler_names(session: Any, workflow_name: str, kind: str) -> list[str]:
    """Query or update names known for a workflow: declarative ones, then the body's."""
    rt = code_of(session)
    if rt is None:
        return []
    table = rt.registry.queries if kind == "query" else rt.registry.updates
    names = sorted(name for (wf, name) in table if wf == workflow_name)
    info = rt.registry.workflows.get(workflow_name)
    fn = info.fn if info is not None else None
    for name in queries_in_code(fn) if kind == "query" else updates_in_code(fn):
        if name not in names:
            names.append(name)
    return names


def handler_input_type(session: Any, workflow_name: str, kind: str, name: str) -> Any:
    """The declared input type of an ``@query`` / ``@update`` handler, or None."""
    rt = code_of(session)
    if rt is None:
        return None
    table = rt.registry.queries if kind == "query" else rt.registry.updates
    handler = table.get((workflow_name, name))
    return None if handler is None else handler.input_type


def _writer(session: Any) -> Runtime:
    rt = runtime_of(session)
    if rt is None:
        raise PermissionError(READ_ONLY_REASON)
    return rt
