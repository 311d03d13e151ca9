"""Determinism check: replay a stored history against the loaded workflow code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvest_engine import (
    HarvestError,
    HistoryEvent,
    NonDeterminismDetected,
    WorkflowReplayer,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from harvest_engine import WorkflowInfo


@dataclass(frozen=True)
class ReplayVerdict:
    """What the replay found.

    Attributes:
        clean: the code replays the history event for event.
        text: one paragraph for the window.
        seq: the first diverging event (None when clean or not known).
        recorded: what the history holds there.
        expected: what today's code does there instead.
        event: the recorded event at `seq`, when there is one.

    """

    clean: bool
    text: str
    seq: int | None = None
    recorded: str = ""
    expected: str = ""
    event: HistoryEvent | None = None


def check_determinism(
    workflows: Iterable[WorkflowInfo | Any], history: Sequence[HistoryEvent]
) -> ReplayVerdict:
    """Replay `history` with `WorkflowReplayer(workflows)`.

    Args:
        workflows: the registered workflow infos (``rt.registry.workflows.values()``)
            or decorated functions.
        history: the run's events.

    """
    events = list(history)
    try:
        result = WorkflowReplayer(list(workflows)).replay(events)
    except NonDeterminismDetected as exc:
        seq = getattr(exc, "seq", None)
        event = next((e for e in events if e.seq == seq), None)
        return ReplayVerdict(
            clean=False,
            text=f"Diverges at event {seq}: {exc}",
            seq=seq,
            recorded=str(getattr(exc, "recorded", "")),
            expected=str(getattr(exc, "expected", "")),
            event=event,
        )
    except (HarvestError, ValueError) as exc:
        return ReplayVerdict(clean=False, text=f"Cannot replay: {exc}")
    state = (
        "the whole closed history"
        if result.closed
        else "every event so far (still running)"
    )
    return ReplayVerdict(
        clean=True,
        text=f"Replays cleanly: {result.workflow_name} replayed {result.events} events, {state}.",
    )
