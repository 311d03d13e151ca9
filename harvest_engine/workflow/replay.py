"""WorkflowReplayer: replay a stored history against today's code, raising on the first divergence."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.authoring import HandlerInfo, WorkflowInfo, info_of
from harvest_engine.errors import (
    ContinueAsNew,
    NonDeterminismDetected,
    QueryNotFound,
    UnknownWorkflow,
)
from harvest_engine.events import (
    IMPOSED,
    TERMINAL_EVENTS,
    HistoryEvent,
    history_from_json,
)
from harvest_engine.workflow.commands import describe_event
from harvest_engine.workflow.instance import WorkflowInstance
from harvest_engine.workflow.run_info import RunInfo
from harvest_engine.workflow.stack import CoroutineStack, coroutine_stacks
from harvest_engine.workflow.waits import RunWait, run_waits

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

# Failures the engine imposes on a run whatever its code did.
_IMPOSED_FAILURES = frozenset(
    {"Panic", "HistoryCapReached", "Unsupported", "ParentClosed"}
)


@dataclass(frozen=True)
class ReplayResult:
    """A clean replay: which workflow, how many events, and whether the history was closed."""

    workflow_name: str
    events: int
    closed: bool


class WorkflowReplayer:
    """Replays histories of the given workflows; synchronous and storage-free."""

    def __init__(
        self, workflows: Iterable[Callable[..., Any] | WorkflowInfo | HandlerInfo]
    ) -> None:
        """`workflows` may also hold `@query` functions, which `query` then answers too."""
        self._workflows: dict[str, WorkflowInfo] = {}
        self._queries: dict[tuple[str, str], HandlerInfo] = {}
        for fn in workflows:
            handler = fn if isinstance(fn, HandlerInfo) else getattr(fn, "info", None)
            if isinstance(handler, HandlerInfo) and handler.kind == "query":
                self._queries[(handler.workflow, handler.name)] = handler
                continue
            info: WorkflowInfo = info_of(fn, WorkflowInfo)
            self._workflows[info.name] = info

    def replay(self, history: Sequence[HistoryEvent] | str | bytes) -> ReplayResult:
        """Replay `history` (events or their JSON); NonDeterminismDetected on divergence."""
        return self._replay(history, lambda _instance: None)[0]

    def query(
        self, history: Sequence[HistoryEvent] | str | bytes, name: str, arg: Any = None
    ) -> Any:
        """Answer query `name` from the state the code has after `history` (any prefix).

        This is how an inspector shows query results as of an earlier event
        ("time travel"); it writes nothing. A handler the body registered by
        then wins over an `@query` function given to the replayer, as in the
        runtime. QueryNotFound when neither has that name; the handler's own
        error propagates.
        """

        def ask(instance: WorkflowInstance) -> Any:
            handler = instance.queries.get(name)
            if handler is not None:
                takes = len(inspect.signature(handler).parameters) > 0
                return handler(arg) if takes else handler()
            workflow_name = instance.run.workflow_name
            declared = self._queries.get((workflow_name, name))
            if declared is not None:
                return declared.fn(
                    instance.ctx, payloads.from_json(arg, declared.input_type)
                )
            known = set(instance.queries) | {
                n for (w, n) in self._queries if w == workflow_name
            }
            raise QueryNotFound(
                exec_id=instance.run.exec_id,
                name=name,
                known=", ".join(sorted(known)) or "none",
            )

        return self._replay(history, ask, strict_end=False)[1]

    def where_waiting(
        self, history: Sequence[HistoryEvent] | str | bytes
    ) -> tuple[RunWait, ...]:
        """What the run waits on after `history` (any prefix); empty once it has closed.

        Signal waits and `await_condition` leave no row in the file: only the
        code, replayed, knows them. A timer's `due_at` is the deadline the
        replay computes; a mutex's place in its queue (`ahead`) needs the
        store, so it is None here (`SqliteRuntime.where_waiting` fills it).
        """
        events = _events(history)
        result, waits = self._replay(
            events, lambda instance: run_waits(instance, events), strict_end=False
        )
        return () if result.closed else waits

    def stack(
        self, history: Sequence[HistoryEvent] | str | bytes
    ) -> tuple[CoroutineStack, ...]:
        """Where each workflow coroutine is suspended in the user's code after `history`.

        The body's task comes first, then the others (gather children,
        signal handler tasks) in creation order; empty once the run closed.
        """
        result, stacks = self._replay(history, coroutine_stacks, strict_end=False)
        return () if result.closed else stacks

    def _replay(
        self,
        history: Sequence[HistoryEvent] | str | bytes,
        then: Callable[[WorkflowInstance], Any],
        *,
        strict_end: bool = True,
    ) -> tuple[ReplayResult, Any]:
        events = _events(history)
        if not events or events[0].type != "WorkflowStarted":
            raise ValueError("a history starts with a WorkflowStarted event")
        started = events[0]
        name = str(started.attrs.get("workflow_name", ""))
        info = self._workflows.get(name)
        if info is None:
            raise UnknownWorkflow(name=name, registered=self._workflows)
        instance = WorkflowInstance(
            info.fn,
            RunInfo(
                workflow_name=name,
                workflow_id=str(started.attrs.get("workflow_id", "")),
                exec_id=str(started.attrs.get("exec_id", "")),
                attempt=int(started.attrs.get("attempt", 1)),
                parent_execution_id=started.attrs.get("parent_exec_id"),
                started_at=started.at,
                predecessor=started.attrs.get("predecessor"),
            ),
            input_type=info.input_type,
            cancel_reason=_cancel_reason(events),
        )
        try:
            closed = False
            instance.expect(events)
            for event in events:
                if event.type in TERMINAL_EVENTS:
                    instance.begin()
                    if strict_end:
                        _check_ending(instance, event)
                    closed = True
                    break
                instance.feed(event)
            instance.begin()
            answer = then(instance)
            return ReplayResult(
                workflow_name=name, events=len(events), closed=closed
            ), answer
        finally:
            instance.close()


def _events(history: Sequence[HistoryEvent] | str | bytes) -> list[HistoryEvent]:
    return (
        history_from_json(history)
        if isinstance(history, (str, bytes))
        else list(history)
    )


def _check_ending(instance: WorkflowInstance, event: HistoryEvent) -> None:
    """The recorded ending must be what the code does now (engine-imposed endings excepted)."""
    if event.type == "WorkflowCompleted":
        expected = "WorkflowCompleted"
        if instance.done:
            kind, value = instance.outcome()
            if kind == "completed":
                if payloads.dumps(value) == payloads.dumps(event.attrs.get("output")):
                    _check_signals_read(instance, event)
                    return
                expected = f"WorkflowCompleted(output={payloads.dumps(value)})"
            else:
                expected = f"the body raising {type(value).__name__}"
        else:
            expected = "the body still running"
        raise _diverged(instance, event, expected)
    if event.type == "WorkflowFailed":
        error = event.attrs.get("error") or {}
        if error.get("type") in _IMPOSED_FAILURES:
            return
        if instance.done and instance.outcome()[0] == "raised":
            return
        raise _diverged(instance, event, "the body not failing")
    if event.type == "WorkflowCancelled":
        # The body saw the request from the start of its replay (guide §7):
        # it must have ended on it. A body still parked never saw it, unless
        # the run was sealed from outside wherever it was parked (terminate).
        if instance.done or instance.pending_commands or _imposed(event):
            return
        raise _diverged(
            instance, event, "the body still parked (it never checked is_cancelled())"
        )
    if event.type == "WorkflowContinuedAsNew":
        if instance.done and isinstance(instance.outcome()[1], ContinueAsNew):
            return
        raise _diverged(instance, event, "no continue_as_new")


def _check_signals_read(instance: WorkflowInstance, event: HistoryEvent) -> None:
    """Early completion: history holds a signal the code never read.

    The engine appends every staged signal, read or not; a body that
    completes with one still unread was written for other input, so the
    strict replay reports it. A signal that lost a deadline race is exempt.
    """
    unread = instance.signals.never_read()
    if unread:
        names = ", ".join(repr(name) for name in unread)
        raise _diverged(
            instance,
            event,
            f"the body reading every signal first (early completion: signal {names} "
            "is in the history but the code never read it)",
        )


def _cancel_reason(events: Sequence[HistoryEvent]) -> str | None:
    """The reason of the history's WorkflowCancelled, which the body saw from its start.

    None for an imposed one (terminate, say): the body never saw a request.
    """
    for event in events:
        if event.type == "WorkflowCancelled" and not _imposed(event):
            return str(event.attrs.get("reason") or "")
    return None


def _imposed(event: HistoryEvent) -> bool:
    """A WorkflowCancelled the run got from outside its body (see `events.IMPOSED`)."""
    return event.attrs.get(IMPOSED) is True


def _diverged(
    instance: WorkflowInstance, event: HistoryEvent, expected: str
) -> NonDeterminismDetected:
    return NonDeterminismDetected(
        exec_id=instance.run.exec_id,
        seq=event.seq,
        recorded=describe_event(event),
        expected=expected,
    )
