"""What the forms ask of a writer session's runtime, one function per action (no Qt)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvest_engine import (
    StartOptions,
    WorkflowIdReusePolicy,
    WorkflowSchedule,
)
from harvest_gui.inspect.signal_names import queries_in_code, updates_in_code

if TYPE_CHECKING:
    from harvest_engine import ScheduleRow, SqliteRuntime, StartOutcome, WorkflowInfo

READ_ONLY_REASON = (
    "Read-only: this window opened the file without the writer lock, so nothing can be "
    "changed from here. Reopen it with File ▸ Open to act on runs."
)
NO_CODE_REASON = (
    "No workflows are registered in this window (start it with --app MODULE)."
)


def runtime_of(session: Any) -> SqliteRuntime | None:
    """The session's runtime, or None for a read-only session."""
    return (
        getattr(session, "runtime", None)
        if getattr(session, "can_write", False)
        else None
    )


def workflow_infos(session: Any) -> list[WorkflowInfo]:
    """The registered workflows, by name."""
    rt = runtime_of(session)
    if rt is None:
        return []
    return [rt.registry.workflows[name] for name in sorted(rt.registry.workflows)]


def workflow_info(session: Any, name: str) -> WorkflowInfo | None:
    """One registered workflow, or None."""
    rt = runtime_of(session)
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


def start_workflow(session: Any, request: StartRequest) -> StartOutcome:
    """Start (or attach to) a run with `start_workflow_with_options`."""
    rt = _writer(session)
    options = StartOptions(
        workflow_id=request.workflow_id or None,
        memo=request.memo,
        search_attributes=request.search_attributes or {},
        reuse_policy=request.reuse_policy,
    )
    return rt.start_workflow_with_options(request.workflow_name, request.input, options)


def send_signal(
    session: Any, exec_id: str, name: str, payload: Any, key: str | None
) -> bool:
    """Stage a signal; with a key, False when the run already holds that key."""
    rt = _writer(session)
    if key:
        return rt.send_signal_idempotent(exec_id, name, payload, key)
    rt.send_signal(exec_id, name, payload)
    return True


async def run_query(session: Any, exec_id: str, name: str, arg: Any) -> Any:
    """Answer a query at the run's frontier (writes nothing)."""
    return await _writer(session).query(exec_id, name, arg)


async def run_update(session: Any, exec_id: str, name: str, arg: Any) -> Any:
    """Run an update (validated, recorded with its result)."""
    return await _writer(session).update(exec_id, name, arg)


def end_run(session: Any, exec_id: str, action: str, reason: str) -> None:
    """``cancel`` (cooperative, `rt.cancel`) or ``terminate`` (immediate, `rt.terminate`).

    Raises:
        ExecutionNotFound, WorkflowNotRunning: from the engine.
        ValueError: `action` is neither.

    """
    rt = _writer(session)
    if action == "cancel":
        rt.cancel(exec_id, reason)
    elif action == "terminate":
        rt.terminate(exec_id, reason)
    else:
        raise ValueError(f"unknown action {action!r}")


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


def purge_terminal(session: Any, older_than: Any) -> int:
    """Remove finished runs closed more than `older_than` ago; how many went."""
    return _writer(session).purge_terminal(older_than)


def handler_names(session: Any, workflow_name: str, kind: str) -> list[str]:
    """Query or update names known for a workflow: declarative ones, then the body's."""
    rt = runtime_of(session)
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
    rt = runtime_of(session)
    if rt is None:
        return None
    table = rt.registry.queries if kind == "query" else rt.registry.updates
    handler = table.get((workflow_name, name))
    return None if handler is None else handler.input_type


def _writer(session: Any) -> SqliteRuntime:
    rt = runtime_of(session)
    if rt is None:
        raise PermissionError(READ_ONLY_REASON)
    return rt
