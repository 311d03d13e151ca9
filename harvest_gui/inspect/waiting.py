"""What a run waits on and where its coroutines stand, as the inspector reports them (no Qt).

With the workflow code loaded (writer mode, or `--app` in read-only mode)
the engine replays the run to its frontier (`rt.where_waiting`,
`WorkflowReplayer.where_waiting` / `.stack`), which is the only way to know
a signal wait or an `await_condition`. Without it, the file's rows and the
history still tell the timers, activity tasks, children, awaited runs and
mutex places, and the report says what is missing and why.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvest_engine import (
    CoroutineStack,
    HarvestError,
    MutexRow,
    PendingTask,
    RunWait,
    TimerRow,
    UnknownWorkflow,
    WorkflowReplayer,
)
from harvest_gui.inspect import queues

if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import datetime

    from harvest_engine import (
        ExecutionDetail,
        HistoryEvent,
        Runtime,
        WorkflowInfo,
    )

NO_CODE = (
    "The workflow code is not loaded in this window, so signal waits and "
    "await_condition cannot be read (they leave no row in the file); open the "
    "file with --app MODULE to see them."
)
REPLAY_LIMIT = 5_000
"""Runs with more events are not replayed on every change (it would stall the window)."""
NO_STACK = (
    "The call stack needs the workflow code: open the file as its writer, or "
    "read-only with --app MODULE."
)


@dataclass(frozen=True)
class WaitingReport:
    """Everything the Summary, Pending and Stack tabs say about where a run stands.

    Attributes:
        running: whether the run is RUNNING (a closed run waits on nothing).
        waits: what it is blocked on.
        stacks: its suspended coroutines (empty without the code).
        note: why the waits may be incomplete ("" when the code answered).
        stack_note: why there is no stack ("" when there is one).
        panic: a failed run's panic, with the traceback the engine stored.
    """

    running: bool
    waits: tuple[RunWait, ...] = ()
    stacks: tuple[CoroutineStack, ...] = ()
    note: str = ""
    stack_note: str = ""
    panic: str = ""


@dataclass(frozen=True)
class FileRows:
    """The rows of the file that say what a run waits on without its code."""

    tasks: Sequence[PendingTask] = ()
    timers: Sequence[TimerRow] = ()
    mutexes: Sequence[MutexRow] = ()


def read_report(
    detail: ExecutionDetail,
    history: Sequence[HistoryEvent],
    rows: FileRows,
    *,
    runtime: Runtime | None = None,
    workflows: Iterable[WorkflowInfo] = (),
) -> WaitingReport:
    """Where the run stands: from the runtime, else the replayer, else the file alone."""
    if detail.state != "RUNNING":
        panic = panic_text(detail)
        if panic:
            code = (
                list(runtime.registry.workflows.values())
                if runtime is not None
                else list(workflows)
            )
            panic += replayed_panic(detail, history, code)
        return WaitingReport(running=False, panic=panic)
    exec_id = str(detail.exec_id)
    if len(history) > REPLAY_LIMIT:
        text = (
            f"This run has {len(history):,} events: the window does not replay it on "
            "every change, so signal waits, conditions and the stack are not shown "
            "(rt.where_waiting / rt.stack give them)."
        )
        return WaitingReport(
            running=True, waits=from_file(history, rows), note=text, stack_note=text
        )
    try:
        if runtime is not None:
            waits = runtime.where_waiting(exec_id)
            stacks = runtime.stack(exec_id)
        else:
            code = list(workflows)
            if not any(info.name == detail.workflow_name for info in code):
                raise UnknownWorkflow(name=detail.workflow_name)
            replayer = WorkflowReplayer(code)
            waits = with_rows(replayer.where_waiting(history), rows)
            stacks = replayer.stack(history)
    except UnknownWorkflow:
        note = (
            NO_CODE
            if runtime is None and not list(workflows)
            else f"The code of workflow {detail.workflow_name} is not loaded: signal "
            "waits and await_condition cannot be read."
        )
        return WaitingReport(
            running=True,
            waits=from_file(history, rows),
            note=note,
            stack_note=NO_STACK if runtime is None else note,
        )
    except HarvestError as exc:
        text = f"The replay of this run failed: {exc.message}"
        return WaitingReport(
            running=True, waits=from_file(history, rows), note=text, stack_note=text
        )
    raised = [stack for stack in stacks if stack.error]
    panic = (
        "Its code raises instead of waiting (a panic: each drive rolls back, and "
        "the third in a row fails the run). Fix the code and drive again.\n\n"
        + stack_text(raised)
        if raised
        else ""
    )
    return WaitingReport(running=True, waits=waits, stacks=stacks, panic=panic)


def with_rows(waits: Iterable[RunWait], rows: FileRows) -> tuple[RunWait, ...]:
    """The waits with the file's timer deadlines and mutex places filled in."""
    due = {t.timer_id: t.fire_at for t in rows.timers}
    ahead = {m.key: m.ahead for m in rows.mutexes}
    out = []
    for wait in waits:
        if wait.kind == "timer" and wait.name in due:
            wait = dataclasses.replace(wait, due_at=due[wait.name])
        elif wait.kind == "mutex" and wait.name in ahead:
            wait = dataclasses.replace(wait, ahead=ahead[wait.name])
        out.append(wait)
    return tuple(out)


def from_file(history: Sequence[HistoryEvent], rows: FileRows) -> tuple[RunWait, ...]:
    """What the file alone shows a run waits on: timers, tasks, runs and mutex places."""
    waits = [RunWait("timer", t.timer_id, due_at=t.fire_at) for t in rows.timers]
    waits += [RunWait("activity", t.name) for t in rows.tasks]
    done = {
        int(e.attrs.get("command_id", 0))
        for e in history
        if e.type
        in (
            "ChildWorkflowCompleted",
            "ChildWorkflowFailed",
            "ExternalWorkflowCompleted",
            "ExternalWorkflowFailed",
        )
    }
    for e in history:
        command = int(e.attrs.get("command_id", 0))
        if command in done:
            continue
        if e.type == "ChildWorkflowStarted" and "parent_close_policy" not in e.attrs:
            child = str(e.attrs.get("child", ""))
            waits.append(RunWait("child", child, target=child))
        elif e.type == "ExternalWorkflowAwaited":
            target = str(e.attrs.get("target", ""))
            waits.append(RunWait("workflow", target, target=target))
    waits += [
        RunWait("mutex", m.key, ahead=m.ahead) for m in rows.mutexes if not m.granted
    ]
    return tuple(waits)


def describe(wait: RunWait, now: datetime) -> str:
    """One line for a wait, with a live countdown for a timer."""
    if wait.kind == "timer" and wait.due_at is not None:
        left = (wait.due_at - now).total_seconds()
        when = wait.due_at.astimezone().strftime("%Y-%m-%d %H:%M:%S")
        tail = f"in {span(left)}" if left >= 0 else f"overdue by {span(-left)}"
        return f"timer {wait.name}, due {when} ({tail})"
    if wait.kind == "queue":
        return queues.place_line(wait)
    if wait.kind in ("child", "workflow"):
        what = "child run" if wait.kind == "child" else "run"
        return f"{what} {wait.target} to finish"
    return wait.describe()


def where_text(wait: RunWait) -> str:
    """`file:line in function: source` of the line that waits ("" when unknown)."""
    if wait.where is None:
        return ""
    where = wait.where
    return f"{short_path(where.file)}:{where.line} in {where.function}: {where.source}"


def short_path(path: str) -> str:
    """A source path as a person reads it: from the working folder or the package root."""
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    here = os.getcwd().rstrip(os.sep) + os.sep
    return path[len(here) :] if path.startswith(here) else path


def stack_text(stacks: Iterable[CoroutineStack]) -> str:
    """The suspended coroutines written the way a Python traceback is."""
    blocks = []
    for stack in stacks:
        lines = [
            f"{stack.task} raised {stack.error}"
            if stack.error
            else f"{stack.task}: awaiting {stack.awaiting}"
        ]
        for frame in stack.frames:
            lines.append(
                f'  File "{short_path(frame.file)}", line {frame.line}, in {frame.function}'
            )
            if frame.source:
                lines.append(f"    {frame.source}")
        if not stack.frames:
            lines.append("  (suspended inside the engine only: no frame of your code)")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def span(seconds: float) -> str:
    """A duration in the largest two units: 2h 5m, 4m 10s, 9s."""
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"


def summary_line(report: WaitingReport) -> str:
    """The one line the Summary and Pending tabs lead with."""
    if not report.running:
        return "The run panicked: its code raised a bug." if report.panic else ""
    if report.panic:
        return "Its code raises: the run cannot move on."
    if not report.waits:
        if report.note:
            return (
                "The file shows nothing it waits on: it waits on a signal or a "
                "condition, or its next drive is due."
            )
        return "Waiting on nothing: the next drive moves it on."
    return (
        f"Waiting on {len(report.waits)} thing{'s' if len(report.waits) != 1 else ''}:"
    )


def replayed_panic(
    detail: ExecutionDetail, history: Sequence[HistoryEvent], code: list[WorkflowInfo]
) -> str:
    """The traceback of a panicked run's code, replayed up to its seal ("" without the code).

    The seal was appended because the code raised on every drive; replaying
    the history before it with today's code raises again, into the user's
    lines. Code that no longer raises there says so.
    """
    if len(history) > REPLAY_LIMIT or not any(
        info.name == detail.workflow_name for info in code
    ):
        return ""
    before = [e for e in history if e.type != "WorkflowFailed"]
    try:
        raised = [s for s in WorkflowReplayer(code).stack(before) if s.error]
    except HarvestError as exc:
        return f"\n\nReplaying it with the loaded code failed: {exc.message}"
    if not raised:
        return "\n\nReplayed with the loaded code, it no longer raises there."
    return "\n\nReplayed with the loaded code:\n" + stack_text(raised)


def panic_text(detail: ExecutionDetail) -> str:
    """A panicked run's error: its message and whatever details (traceback) were stored."""
    if detail.error.is_null:
        return ""
    value: Any = detail.error.value
    if not isinstance(value, dict) or value.get("type") != "Panic":
        return ""
    lines = [str(value.get("message", ""))]
    details = value.get("details")
    if isinstance(details, str):
        lines.append(details)
    elif isinstance(details, list):
        lines += [str(item) for item in details]
    elif isinstance(details, dict):
        for key, item in details.items():
            if isinstance(item, str):
                lines.append(f"{key}:\n{item}" if "\n" in item else f"{key}: {item}")
            else:
                lines.append(f"{key}: {json.dumps(item, indent=2, default=str)}")
    return "\n".join(line.rstrip() for line in lines if line)
