"""Value types a drive or a read returns: ExecutionId, ErrorInfo, RunState, ExecutionOutcome."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True, order=True)
class ExecutionId:
    """The id of one run. Prints and parses as text, so it can be typed into a CLI."""

    value: str

    def __post_init__(self) -> None:
        if not isinstance(self.value, str) or not self.value.strip():
            raise ValueError(f"an execution id is non-empty text, got {self.value!r}")

    @classmethod
    def new(cls) -> ExecutionId:
        """A fresh random id."""
        return cls(str(uuid.uuid4()))

    @classmethod
    def parse(cls, text: str | ExecutionId) -> ExecutionId:
        """Read an id from text (surrounding white space ignored)."""
        if isinstance(text, ExecutionId):
            return text
        return cls(str(text).strip())

    def __str__(self) -> str:
        return self.value


def as_exec_id(value: str | ExecutionId) -> ExecutionId:
    """Accept an ExecutionId or its text wherever an id is taken."""
    return ExecutionId.parse(value)


@dataclass(frozen=True)
class ErrorInfo:
    """A stored failure: its type name, message, retryability, details and user-code traceback.

    `stack_trace` is the traceback of the user's code where it raised
    (harvest's and asyncio's frames trimmed, bounded: `tracebacks.py`), None
    for a failure the engine made itself and for histories recorded before it.
    It is data for people: replay never compares it.
    """

    type: str
    message: str
    non_retryable: bool = False
    details: Any = None
    stack_trace: str | None = None

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict[str, Any]:
        """As stored in events and rows (`stack_trace` only when there is one)."""
        data: dict[str, Any] = {
            "type": self.type,
            "message": self.message,
            "non_retryable": self.non_retryable,
            "details": self.details,
        }
        if self.stack_trace is not None:
            data["stack_trace"] = self.stack_trace
        return data

    @classmethod
    def from_json(cls, data: Any) -> ErrorInfo:
        """Read a stored failure (tolerates a bare string)."""
        if not isinstance(data, dict):
            return cls(type="Error", message=str(data))
        return cls(
            type=str(data.get("type") or "Error"),
            message=str(data.get("message") or ""),
            non_retryable=bool(data.get("non_retryable")),
            details=data.get("details"),
            stack_trace=trace
            if isinstance(trace := data.get("stack_trace"), str)
            else None,
        )


class RunState:
    """Where a drive left a run. Match on the variants, e.g. ``RunState.Completed(output=o)``."""

    Completed: ClassVar[type[_Completed]]
    Failed: ClassVar[type[_Failed]]
    WaitingSignal: ClassVar[type[_WaitingSignal]]
    WaitingTimer: ClassVar[type[_WaitingTimer]]
    WaitingWorkflow: ClassVar[type[_WaitingWorkflow]]
    WaitingMutex: ClassVar[type[_WaitingMutex]]
    Cancelled: ClassVar[type[_Cancelled]]
    TimedOut: ClassVar[type[_TimedOut]]
    Terminated: ClassVar[type[_Terminated]]
    ContinuedAsNew: ClassVar[type[_ContinuedAsNew]]
    InProgress: ClassVar[type[_InProgress]]

    @property
    def is_terminal(self) -> bool:
        """Whether the run has ended."""
        return isinstance(self, _TERMINAL)


@dataclass(frozen=True)
class _Completed(RunState):
    output: Any


@dataclass(frozen=True)
class _Failed(RunState):
    error: ErrorInfo


@dataclass(frozen=True)
class _WaitingSignal(RunState):
    """Parked until a signal arrives.

    `name` is the signal awaited (the first one when several are);
    `names` every signal that can move the run on: ``(name,)`` for a plain
    wait, and every registered handler's name for a run parked in
    `await_condition` whose state only signal handlers change.
    """

    name: str
    names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.names:
            object.__setattr__(self, "names", (self.name,))

    def __repr__(self) -> str:
        # A plain wait prints as before `names` existed (scripts print states).
        if self.names == (self.name,):
            return f"RunState.WaitingSignal(name={self.name!r})"
        return f"RunState.WaitingSignal(name={self.name!r}, names={self.names!r})"


@dataclass(frozen=True)
class _WaitingTimer(RunState):
    pass


@dataclass(frozen=True)
class _WaitingWorkflow(RunState):
    exec_id: ExecutionId


@dataclass(frozen=True)
class _WaitingMutex(RunState):
    key: str


@dataclass(frozen=True)
class _Cancelled(RunState):
    reason: str


@dataclass(frozen=True)
class _TimedOut(RunState):
    error: ErrorInfo


@dataclass(frozen=True)
class _Terminated(RunState):
    reason: str


@dataclass(frozen=True)
class _ContinuedAsNew(RunState):
    next: ExecutionId


@dataclass(frozen=True)
class _InProgress(RunState):
    pass


_TERMINAL = (_Completed, _Failed, _Cancelled, _TimedOut, _Terminated, _ContinuedAsNew)

RunState.Completed = _Completed
RunState.Failed = _Failed
RunState.WaitingSignal = _WaitingSignal
RunState.WaitingTimer = _WaitingTimer
RunState.WaitingWorkflow = _WaitingWorkflow
RunState.WaitingMutex = _WaitingMutex
RunState.Cancelled = _Cancelled
RunState.TimedOut = _TimedOut
RunState.Terminated = _Terminated
RunState.ContinuedAsNew = _ContinuedAsNew
RunState.InProgress = _InProgress
for _variant in (
    *_TERMINAL,
    _WaitingSignal,
    _WaitingTimer,
    _WaitingWorkflow,
    _WaitingMutex,
    _InProgress,
):
    _variant.__name__ = _variant.__qualname__ = "RunState." + _variant.__name__.lstrip(
        "_"
    )


class ExecutionOutcome:
    """A stored outcome, read without driving: Completed, Failed, Running, Enqueued or Terminated."""

    Completed: ClassVar[type[_OutcomeCompleted]]
    Failed: ClassVar[type[_OutcomeFailed]]
    Running: ClassVar[type[_OutcomeRunning]]
    Enqueued: ClassVar[type[_OutcomeEnqueued]]
    Terminated: ClassVar[type[_OutcomeTerminated]]

    @property
    def is_terminal(self) -> bool:
        """Whether the run has ended (all but Running and Enqueued), as `RunState.is_terminal`."""
        return not isinstance(self, (_OutcomeRunning, _OutcomeEnqueued))


@dataclass(frozen=True)
class _OutcomeCompleted(ExecutionOutcome):
    output: Any


@dataclass(frozen=True)
class _OutcomeFailed(ExecutionOutcome):
    error: ErrorInfo


@dataclass(frozen=True)
class _OutcomeRunning(ExecutionOutcome):
    pass


@dataclass(frozen=True)
class _OutcomeEnqueued(ExecutionOutcome):
    queue: str


@dataclass(frozen=True)
class _OutcomeTerminated(ExecutionOutcome):
    state: str


ExecutionOutcome.Completed = _OutcomeCompleted
ExecutionOutcome.Failed = _OutcomeFailed
ExecutionOutcome.Running = _OutcomeRunning
ExecutionOutcome.Enqueued = _OutcomeEnqueued
ExecutionOutcome.Terminated = _OutcomeTerminated
for _outcome in (
    _OutcomeCompleted,
    _OutcomeFailed,
    _OutcomeRunning,
    _OutcomeEnqueued,
    _OutcomeTerminated,
):
    _outcome.__name__ = _outcome.__qualname__ = (
        "ExecutionOutcome." + _outcome.__name__.removeprefix("_Outcome")
    )

TERMINAL_STATES = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TERMINATED", "TIMED_OUT", "CONTINUED_AS_NEW"}
)
ALL_STATES = frozenset({"RUNNING", "ENQUEUED", *TERMINAL_STATES})
"""Every state a run's row may hold: ENQUEUED waits for its queue (flow control)."""
