"""A run's history written as JSON that `WorkflowReplayer` (and a test) can load."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvest_engine import HistoryEvent

if TYPE_CHECKING:
    from collections.abc import Sequence

FORMAT = "harvest-history/1"


def history_document(events: Sequence[HistoryEvent], **about: Any) -> str:
    """The export text: ``{"format", "events": [...], ...about}``.

    `WorkflowReplayer.replay(text)` and `harvest replay --history` read it:
    they take the ``events`` list and ignore the other keys.
    """
    doc: dict[str, Any] = {
        "format": FORMAT,
        **about,
        "events": [e.to_dict() for e in events],
    }
    return json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=False, default=str)


def export_history(
    path: str | Path, events: Sequence[HistoryEvent], **about: Any
) -> Path:
    """Write the export to `path` atomically (a temporary file renamed over it)."""
    target = Path(path)
    tmp = target.with_name(target.name + ".part")
    tmp.write_text(history_document(events, **about), encoding="utf-8")
    os.replace(tmp, target)
    return target


def load_history_file(path: str | Path) -> list[HistoryEvent]:
    """Read an export (or `harvest history --json` output, or a bare list of events).

    Raises:
        ValueError: the file is not such a document.

    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON: {exc}") from exc
    items = data.get("events") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError(f"{path} holds no list of events")
    try:
        return [HistoryEvent.from_json(item) for item in items]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path} holds an event that cannot be read: {exc}") from exc
