"""Errors for a call about a run that no run, state or registration allows.

Unknown or closed runs, refused starts, unregistered workflows, activities
and schedules, and client commands no serving process answered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors.base import HarvestError, SqliteError, _run_id

if TYPE_CHECKING:
    from collections.abc import Iterable

    from harvest_engine.states import ExecutionId


class ExecutionNotFound(SqliteError):
    """No execution has this id."""

    _template = "no execution with id {exec_id}"

    def __init__(self, *, exec_id: ExecutionId | str) -> None:
        super().__init__(exec_id=_run_id(exec_id))


class WorkflowNotRunning(SqliteError):
    """The execution is terminal, so it cannot take this call."""

    _template = "execution {exec_id} is not running (state {state})"

    def __init__(self, *, exec_id: ExecutionId | str, state: str) -> None:
        super().__init__(exec_id=_run_id(exec_id), state=state)


class WorkflowAlreadyStarted(SqliteError):
    """The reuse policy refused a start because a prior run holds the id."""

    _template = (
        "workflow {workflow_name!r} with id {workflow_id!r} already has run "
        "{exec_id} ({state}); the reuse policy {policy} refuses a new start"
    )

    def __init__(
        self,
        *,
        workflow_name: str,
        workflow_id: str,
        exec_id: ExecutionId | str,
        state: str,
        policy: str,
    ) -> None:
        super().__init__(
            workflow_name=workflow_name,
            workflow_id=workflow_id,
            exec_id=_run_id(exec_id),
            state=state,
            policy=policy,
        )


class WorkflowIdNotFound(SqliteError):
    """No run of this workflow name (of any, when it is None) has this workflow id."""

    _template = "no run of {workflow_name!r} has workflow id {workflow_id!r}"

    def __init__(self, *, workflow_name: str | None, workflow_id: str) -> None:
        message = (
            None
            if workflow_name is not None
            else f"no run has workflow id {workflow_id!r}"
        )
        super().__init__(message, workflow_name=workflow_name, workflow_id=workflow_id)


def _registered_text(registered: tuple[str, ...]) -> str:
    """What the process has, so a misspelt name shows beside the right one."""
    if not registered:
        return "none is registered"
    return "registered: " + ", ".join(repr(n) for n in sorted(registered))


class UnknownWorkflow(SqliteError):
    """No workflow of this name is registered in this runtime.

    ``registered`` lists the workflow names the process does have (empty when
    the raiser does not know them).
    """

    _template = (
        "workflow {name!r} is not registered ({known}; register it before driving)"
    )

    def __init__(self, *, name: str, registered: Iterable[str] = ()) -> None:
        names = tuple(registered)
        super().__init__(name=name, registered=names, known=_registered_text(names))


class UnknownActivity(SqliteError):
    """No activity of this name is registered in this runtime.

    ``registered`` lists the activity names the process does have.
    """

    _template = (
        "activity {name!r} is not registered ({known}; register it before driving)"
    )

    def __init__(self, *, name: str, registered: Iterable[str] = ()) -> None:
        names = tuple(registered)
        super().__init__(name=name, registered=names, known=_registered_text(names))


class ScheduleNotFound(SqliteError):
    """No schedule is stored for this workflow name (trigger and backfill need one)."""

    _template = "no schedule is stored for workflow {workflow_name!r}"

    def __init__(self, *, workflow_name: str) -> None:
        super().__init__(workflow_name=workflow_name)


class CommandTimedOut(SqliteError):
    """No serving process answered a client command in time; it stays queued and applies later."""

    _template = (
        "command {command_id} ({kind}) got no reply within {seconds}s: no process "
        "serves {path} (start one with `await rt.serve()`); the command stays queued "
        "and is applied when one does"
    )

    def __init__(
        self, *, command_id: str, kind: str = "", seconds: float = 0.0, path: str = ""
    ) -> None:
        super().__init__(command_id=command_id, kind=kind, seconds=seconds, path=path)


class NotServed(CommandTimedOut):
    """No process has served the file lately: a client command stops waiting within a second.

    A `CommandTimedOut`, so handlers of that still catch it. The command
    stays queued under `command_id`: a serving process applies it once one
    runs; repeat the call with that id to await it, or withdraw it.
    """

    _template = (
        "command {command_id} ({kind}) is queued, but no process serves {path} "
        "({last_beat}): start one with `await rt.serve()`; the command stays queued "
        "and is applied when one does (to drop it: `harvest withdraw` with its "
        "command id, or client.withdraw)"
    )
    command_id: str
    path: str
    last_beat: str

    def __init__(
        self,
        *,
        command_id: str,
        kind: str = "",
        seconds: float = 0.0,
        path: str = "",
        last_beat: str = "",
    ) -> None:
        HarvestError.__init__(
            self,
            command_id=command_id,
            kind=kind,
            seconds=seconds,
            path=path,
            last_beat=last_beat,
        )


class InvalidResetPoint(SqliteError):
    """A reset or fork point the run's history does not allow (nothing was written).

    A reset's `to_event` must be a decision boundary: an event of the
    history, before its end, after which the run held nothing open (no
    activity, timer, child, awaited run or mutex waiting for its answer). A
    fork's `from_step` must name one of the run's activity steps.
    """

    _template = "run {exec_id} cannot restart at {point}: {reason}"

    def __init__(self, *, exec_id: ExecutionId | str, point: str, reason: str) -> None:
        super().__init__(exec_id=_run_id(exec_id), point=point, reason=reason)


class NotResettable(SqliteError):
    """The run has no decision to go back to (it was never decided); nothing was written."""

    _template = "run {exec_id} cannot be reset or forked: {reason}"

    def __init__(self, *, exec_id: ExecutionId | str, reason: str) -> None:
        super().__init__(exec_id=_run_id(exec_id), reason=reason)
