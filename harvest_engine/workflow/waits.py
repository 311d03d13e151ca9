"""What a parked run is blocked on, read from its replayed instance: signals, timers, runs, keys.

The durable tables know a run's unfired timers and tasks, but a signal wait
or an `await_condition` leaves no row: only the workflow code, replayed to
the frontier, knows it. Each wait names the user-code line that waits for
it when the suspended coroutines show one (workflow/stack.py).
"""

from __future__ import annotations

import inspect
import io
import linecache
import tokenize
import typing
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.workflow.context import WorkflowContext
from harvest_engine.workflow.mutex import WorkflowMutex
from harvest_engine.workflow.stack import StackFrame, frames_of, is_user, user_frame
from harvest_engine.workflow.timers import TimerHandle

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import FrameType

    from harvest_engine.events import HistoryEvent
    from harvest_engine.workflow.instance import WorkflowInstance

# Engine calls whose frame names what the user's line waits for.
_SIGNAL_CALLS = {
    WorkflowContext.wait_for_signal.__code__,
    WorkflowContext.receive_signal.__code__,
    WorkflowContext.wait_for_signal_timeout.__code__,
    WorkflowContext.receive_signal_timeout.__code__,
}
_TYPED_SIGNAL_CALLS = {
    WorkflowContext.receive_signal.__code__,
    WorkflowContext.receive_signal_timeout.__code__,
}
_CONDITION_CALL = WorkflowContext.await_condition.__code__
_CHILD_CALL = WorkflowContext.spawn_child_workflow.__code__
_AWAIT_CALL = WorkflowContext.await_external_workflow.__code__
_TIMER_CALLS = {WorkflowContext.timer.__code__, TimerHandle.await_fire.__code__}
_MUTEX_CALLS = {WorkflowMutex.acquire.__code__, WorkflowMutex.__aenter__.__code__}
_ACTIVITY_CALLS = {
    WorkflowContext.execute_activity.__code__,
    WorkflowContext.execute_local_activity.__code__,
}


@dataclass(frozen=True)
class RunWait:
    """One thing a running run is blocked on.

    Attributes:
        kind: "signal" (a parked wait), "signal handler" (pushed to a
            handler), "timer", "activity", "local activity", "child" (an
            attached child run), "workflow" (`await_external_workflow`),
            "mutex" or "condition".
        name: the signal name, timer id, activity name, child or target
            exec id, mutex key, or the condition's source text.
        payload_type: the type a signal's payload converts to, when the
            `receive_signal` call or the handler is annotated.
        due_at: when a timer fires.
        target: the exec id of the child or external run.
        ahead: for a mutex, how many runs are ahead in its queue (the
            holder counts); None when not known (a replay without the store).
        where: the user-code line that waits, when a suspended coroutine
            shows it.
        held_by: for a run waiting in its queue (kind "queue", `ahead` runs
            before it), the limit that holds it: "concurrency",
            "worker_concurrency", "partition_concurrency", "rate",
            "start_delay", or "order" (runs ahead of it take the free slots).
    """

    kind: str
    name: str
    payload_type: str | None = None
    due_at: datetime | None = None
    target: str | None = None
    ahead: int | None = None
    where: StackFrame | None = None
    held_by: str | None = None

    def describe(self) -> str:
        """One line for a person: what it waits for and the detail that matters."""
        text = {
            "signal": f"signal {self.name!r}",
            "signal handler": f"signal {self.name!r} (handler)",
            "timer": f"timer {self.name}",
            "activity": f"activity {self.name}",
            "local activity": f"local activity {self.name}",
            "child": f"child run {self.target}",
            "workflow": f"run {self.target}",
            "mutex": f"mutex {self.name!r}",
            "condition": f"condition {self.name}",
            "queue": f"queue {self.name!r}",
        }.get(self.kind, f"{self.kind} {self.name}")
        if self.payload_type:
            text += f", payload {self.payload_type}"
        if self.due_at is not None:
            text += f", due {self.due_at.isoformat(timespec='seconds')}"
        if self.kind == "queue":
            ahead = self.ahead or 0
            text += f", {ahead} ahead, held by {self.held_by or 'order'}"
        elif self.ahead is not None:
            text += (
                " (held by this run)"
                if self.ahead == 0
                else f", {self.ahead} run{'s' if self.ahead != 1 else ''} ahead"
            )
        return text


def run_waits(
    instance: WorkflowInstance, history: Sequence[HistoryEvent]
) -> tuple[RunWait, ...]:
    """Everything the replayed instance waits on, in a stable order (kind, then command order)."""
    calls = _call_sites(instance)
    waits: list[RunWait] = []
    for name in instance.signals.waiting_names():
        site = _site(calls, _SIGNAL_CALLS, "name", name)
        payload_type = None
        if site is not None and site[0].f_code in _TYPED_SIGNAL_CALLS:
            payload_type = type_name(site[0].f_locals.get("type"))
        waits.append(
            RunWait(
                "signal",
                name,
                payload_type=payload_type,
                where=None if site is None else site[1],
            )
        )
    for name, handler in instance.signals.handlers().items():
        waits.append(
            RunWait(
                "signal handler",
                name,
                payload_type=type_name(payloads.first_param_hint(handler)),
                where=_function_line(handler),
            )
        )
    for timer_id, fire_at in instance.pending.armed_timers():
        site = _site(calls, _TIMER_CALLS, "timer_id", timer_id) or _owner_site(
            calls, _TIMER_CALLS, TimerHandle, "timer_id", timer_id
        )
        waits.append(
            RunWait(
                "timer",
                timer_id,
                due_at=fire_at,
                where=None if site is None else site[1],
            )
        )
    names = _activity_names(history)
    local = set(instance.pending.waiting_local_activity_ids())
    for activity_id in sorted(instance.waiting_activity_ids()):
        name = names.get(activity_id, f"#{activity_id}")
        site = _activity_site(calls, name)
        waits.append(
            RunWait(
                "local activity" if activity_id in local else "activity",
                name,
                where=None if site is None else site[1],
            )
        )
    for kind, _, target in instance.waiting_workflows():
        site = _site(calls, {_CHILD_CALL}, "child", target) or _site(
            calls, {_AWAIT_CALL}, "exec_id", target
        )
        waits.append(
            RunWait(
                "child" if kind == "child" else "workflow",
                target,
                target=target,
                where=None if site is None else site[1],
            )
        )
    for key in instance.waiting_mutex_keys():
        site = _owner_site(calls, _MUTEX_CALLS, WorkflowMutex, "key", key)
        waits.append(RunWait("mutex", key, where=None if site is None else site[1]))
    for predicate in instance.pending.waiting_predicates():
        site = _site(calls, {_CONDITION_CALL}, "predicate", predicate)
        waits.append(
            RunWait(
                "condition",
                _predicate_text(predicate),
                where=None if site is None else site[1],
            )
        )
    return tuple(waits)


def type_name(hint: Any) -> str | None:
    """A readable name of a payload type annotation (None when there is none)."""
    if hint is None or hint is inspect.Parameter.empty or hint is Any:
        return None
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__name__
    return str(hint).replace("typing.", "")


# -- matching waits to the user's lines ---------------------------------------------

_Site = tuple["FrameType", StackFrame]


def _call_sites(instance: WorkflowInstance) -> list[_Site]:
    """(engine frame, the user frame above it) for every engine frame a user frame awaits through."""
    sites: list[_Site] = []
    caller: StackFrame | None = None
    for task in instance.loop.live_tasks():
        caller = None
        for frame in frames_of(task):
            if is_user(frame):
                caller = user_frame(frame)
            elif caller is not None:
                sites.append((frame, caller))
    return sites


def _site(calls: list[_Site], codes: set[Any], local: str, value: Any) -> _Site | None:
    for frame, where in calls:
        if frame.f_code in codes and _same(frame.f_locals.get(local), value):
            return frame, where
    return None


def _same(local: Any, value: Any) -> bool:
    """Equal, or the same text (an ExecutionId local against a str target)."""
    if local is value or local == value:
        return True
    return isinstance(value, str) and isinstance(local, str) and str(local) == value


def _owner_site(
    calls: list[_Site], codes: set[Any], owner: type, attr: str, value: Any
) -> _Site | None:
    """The call whose `self` (a TimerHandle, a WorkflowMutex) has `attr` == value."""
    for frame, where in calls:
        this = frame.f_locals.get("self")
        if (
            frame.f_code in codes
            and isinstance(this, owner)
            and getattr(this, attr) == value
        ):
            return frame, where
    return None


def _activity_site(calls: list[_Site], name: str) -> _Site | None:
    for frame, where in calls:
        attrs = frame.f_locals.get("attrs")
        if (
            frame.f_code in _ACTIVITY_CALLS
            and isinstance(attrs, dict)
            and attrs.get("name") == name
        ):
            return frame, where
    return None


def _activity_names(history: Sequence[HistoryEvent]) -> dict[int, str]:
    return {
        int(e.attrs.get("activity_id", 0)): str(e.attrs.get("name", ""))
        for e in history
        if e.type in ("ActivityScheduled", "LocalActivityScheduled")
    }


def _function_line(fn: Callable[..., Any]) -> StackFrame | None:
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    line = code.co_firstlineno
    return StackFrame(
        file=code.co_filename,
        line=line,
        function=code.co_qualname,
        source=linecache.getline(code.co_filename, line).strip(),
    )


def _predicate_text(predicate: Callable[[], bool]) -> str:
    """A lambda's source line, or the predicate function's name."""
    code = getattr(predicate, "__code__", None)
    if code is None:
        return repr(predicate)
    if code.co_name != "<lambda>":
        return f"{code.co_qualname}()"
    line = linecache.getline(code.co_filename, code.co_firstlineno).strip()
    start = line.find("lambda")
    if start < 0:
        return "lambda"
    text = _without_comment(line[start:]).rstrip(": ")
    # The line usually ends with the call's closing parentheses: drop the unbalanced ones.
    while text.endswith(")") and text.count(")") > text.count("("):
        text = text[:-1]
    return text


def _without_comment(text: str) -> str:
    """The line without a trailing `# comment` (a `#` inside a string stays)."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                return text[: token.start[1]].rstrip()
    except (tokenize.TokenError, SyntaxError):
        pass
    return text.rstrip()
