"""Replaying a run in memory to its frontier, for queries and updates; nothing is written.

A fresh `WorkflowInstance` is fed the stored history (never the decider's
cached instance, which must not advance), so a query or an update answers
exactly what a fresh replay answers. A RUNNING run then runs on to its
frontier as its next drive would before new input: the code past the last
recorded event runs again (a `ctx.side_effect` closure included) and parks
at the first wait the history does not answer. A terminal run stops at its
recorded end.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from harvest_engine.errors import (
    HarvestError,
    HarvestInternalError,
    NonDeterminismDetected,
)
from harvest_engine.runtime.deciding.runs import run_info
from harvest_engine.workflow.instance import WorkflowInstance

if typing.TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    from harvest_engine.authoring import WorkflowInfo
    from harvest_engine.events import HistoryEvent
    from harvest_engine.store.rows import ExecutionRecord


class ReplayBroke(Exception):
    """The run's own code raised during the replay (outside its body task), or broke determinism."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error


def replay(
    row: ExecutionRecord,
    events: Sequence[HistoryEvent],
    info: WorkflowInfo,
    now: datetime,
) -> WorkflowInstance:
    """A fresh instance of the run at its frontier; the caller closes it.

    Raises:
        NonDeterminismDetected: the code no longer matches the history.
        ReplayBroke: a signal handler or predicate raised, or the code made a
            non-deterministic call.
    """
    instance = WorkflowInstance(
        info.fn,
        run_info(row),
        input_type=info.input_type,
        cancel_reason=row.cancel_reason,
    )
    try:
        instance.expect(list(events))
        for event in events:
            instance.feed(event)
        instance.begin()
        if row.state == "RUNNING":
            instance.flush(row.next_seq, now)
    except (NonDeterminismDetected, HarvestInternalError):
        instance.close()
        raise
    except Exception as exc:
        instance.close()
        raise ReplayBroke(exc) from exc
    if instance.violation is not None:
        violation = instance.violation
        instance.close()
        raise ReplayBroke(violation)
    return instance


def takes_arg(fn: Callable[..., Any]) -> bool:
    """Whether a handler accepts one positional argument (`fn(arg)` rather than `fn()`)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    for param in signature.parameters.values():
        if param.kind in (
            param.POSITIONAL_ONLY,
            param.POSITIONAL_OR_KEYWORD,
            param.VAR_POSITIONAL,
        ):
            return True
    return False


def first_param_type(fn: Callable[..., Any], skip: int = 0) -> Any:
    """The annotation of a handler's positional parameter number `skip` (None when absent)."""
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return None
    if len(params) <= skip:
        return None
    try:
        hints = typing.get_type_hints(fn)
    except (NameError, TypeError, AttributeError):
        return None
    return hints.get(params[skip].name)


def describe_error(error: BaseException) -> str:
    """A handler's error as one line of text: the message of a typed error, else type and text."""
    if isinstance(error, HarvestError):
        return error.message
    return f"{type(error).__name__}: {error}"
