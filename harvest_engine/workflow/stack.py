"""Where a parked run's coroutines stand in the user's code: the call stack of each task.

A replayed instance at its frontier holds every workflow coroutine suspended
(the main body, `asyncio.gather` children, signal handler tasks). Walking a
task's `cr_await` chain from its coroutine gives the frames it is suspended
in; the frames inside harvest_engine and asyncio are the machinery, so only
the user's frames are kept, and the innermost machinery call names what the
task awaits ("WorkflowContext.wait_for_signal").
"""

from __future__ import annotations

import asyncio
import linecache
import os
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

    from harvest_engine.workflow.instance import WorkflowInstance

_ENGINE_DIR = str(Path(__file__).resolve().parents[1])
_ASYNCIO_DIR = str(Path(asyncio.__file__).resolve().parent)
_MACHINERY = (_ENGINE_DIR + os.sep, _ASYNCIO_DIR + os.sep)


@dataclass(frozen=True)
class StackFrame:
    """One frame of user code a workflow coroutine is suspended in.

    Attributes:
        file: the source file's path.
        line: the line number the frame stands at.
        function: the function's qualified name.
        source: that line of source, stripped ("" when the file is unreadable).
    """

    file: str
    line: int
    function: str
    source: str

    def describe(self) -> str:
        """`file:line in function`, the way a traceback names a frame."""
        return f"{self.file}:{self.line} in {self.function}"


@dataclass(frozen=True)
class CoroutineStack:
    """One suspended workflow task: its user frames, outermost first, and what it awaits.

    Attributes:
        task: the task's name ("workflow <name>" for the body).
        frames: the user-code frames, outermost first (empty when the task
            is suspended inside the engine only, e.g. a handler wrapper).
        awaiting: what the innermost frame awaits, e.g.
            "WorkflowContext.wait_for_signal" or "asyncio.gather".
        error: for a body that raised instead of parking (a panicking
            run), "Type: message" of the exception, and `frames` are its
            traceback into the user's code; "" for a suspended task.
    """

    task: str
    frames: tuple[StackFrame, ...]
    awaiting: str
    error: str = ""


def coroutine_stacks(instance: WorkflowInstance) -> tuple[CoroutineStack, ...]:
    """The call stack of every task still suspended on the instance's loop, body first."""
    stacks: list[CoroutineStack] = []
    for task in instance.loop.live_tasks():
        frames = list(_frames(task.get_coro()))
        user = tuple(user_frame(f) for f in frames if is_user(f))
        marks = [i for i, f in enumerate(frames) if is_user(f)]
        # The engine call the user's innermost frame made is what it awaits.
        called = marks[-1] + 1 if marks else len(frames) - 1
        if 0 <= called < len(frames):
            awaiting = frames[called].f_code.co_qualname
        else:
            awaiting = _describe_waiter(task)
        stacks.append(
            CoroutineStack(task=task.get_name(), frames=user, awaiting=awaiting)
        )
    main = instance.main
    if main is not None:
        name = main.get_name()
        stacks.sort(key=lambda s: s.task != name)
        raised = _raised(main)
        if raised is not None:
            stacks.insert(0, raised)
    return tuple(stacks)


def _raised(main: asyncio.Task[Any]) -> CoroutineStack | None:
    """The body's traceback into the user's code when it raised (a panicking run)."""
    if not main.done() or main.cancelled():
        return None
    error = main.exception()
    if error is None:
        return None
    frames = tuple(
        StackFrame(
            file=summary.filename,
            line=summary.lineno or 0,
            function=summary.name,
            source=(summary.line or "").strip(),
        )
        for summary, (frame, _) in zip(
            traceback.extract_tb(error.__traceback__),
            traceback.walk_tb(error.__traceback__),
            strict=True,
        )
        if is_user(frame)
    )
    text = f"{type(error).__name__}: {error}"
    return CoroutineStack(
        task=main.get_name(),
        frames=frames,
        awaiting=f"nothing: it raised {text}",
        error=text,
    )


def frames_of(task: asyncio.Task[Any]) -> Iterator[FrameType]:
    """Every frame (user and engine) a suspended task stands in, outermost first."""
    return _frames(task.get_coro())


def _frames(coro: Any) -> Iterator[FrameType]:
    """The frames of a coroutine chain, outermost first (coroutines, generators, async generators)."""
    seen = 0
    while coro is not None and seen < 1000:
        seen += 1
        frame = (
            getattr(coro, "cr_frame", None)
            or getattr(coro, "gi_frame", None)
            or getattr(coro, "ag_frame", None)
        )
        if frame is None:
            return
        yield frame
        coro = (
            getattr(coro, "cr_await", None)
            or getattr(coro, "gi_yieldfrom", None)
            or getattr(coro, "ag_await", None)
        )


def is_user(frame: FrameType) -> bool:
    """Whether a frame is the user's code (not harvest_engine's, asyncio's or a built-in's)."""
    path = frame.f_code.co_filename
    if path.startswith("<"):
        return False
    resolved = str(Path(path).resolve())
    return not resolved.startswith(_MACHINERY)


def user_frame(frame: FrameType) -> StackFrame:
    """The frame as a StackFrame, with its current line of source."""
    code = frame.f_code
    line = frame.f_lineno or code.co_firstlineno
    return StackFrame(
        file=code.co_filename,
        line=line,
        function=code.co_qualname,
        source=linecache.getline(code.co_filename, line).strip(),
    )


def _describe_waiter(task: asyncio.Task[Any]) -> str:
    """What a task whose innermost frame is user code awaits (its `_fut_waiter`)."""
    waiter = getattr(task, "_fut_waiter", None)
    if waiter is None:
        return "nothing (ready to run)"
    kind = type(waiter).__name__
    if kind == "_GatheringFuture":
        return "asyncio.gather"
    if isinstance(waiter, asyncio.Task):
        return f"task {waiter.get_name()}"
    return "a future"
