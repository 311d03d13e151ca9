"""HistoryModel: a run's events (one page of them), seq, time, type and summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_gui.inspect import formatting
from harvest_gui.models.records import RecordTableModel

if TYPE_CHECKING:
    from harvest_engine import HistoryEvent

COL_TYPE = 2
COL_SUMMARY = 3
SUMMARY_LIMIT = 2000
"""A summary cell's cap: the whole text of any real event, never a megabyte."""


def _summary(event: HistoryEvent) -> str:
    """The event's name and its whole error message (the engine's one-liner cuts it).

    The cell is elided to the column's width; its tooltip and the selected
    event's JSON show the whole text (issue 17 §11).
    """
    a = event.attrs
    name = a.get("name") or a.get("timer_id") or a.get("activity_id")
    bits = [str(name)] if name is not None else []
    if isinstance(a.get("error"), dict):
        bits.append(str(a["error"].get("message", "")))
    text = " ".join(bits)
    if not text:
        text = ", ".join(
            f"{k}={formatting.json_text(v, None)}" for k, v in event.attrs.items()
        )
    text = " ".join(text.split())  # one line: a newline would hide the rest of the cell
    return formatting.middle(text, SUMMARY_LIMIT)


class HistoryModel(RecordTableModel["HistoryEvent"]):
    """A run's events: seq, time, type, summary."""

    def __init__(self) -> None:
        super().__init__(
            [
                ("Seq", lambda e: str(e.seq)),
                ("Time", lambda e: formatting.when_precise(e.at)),
                ("Type", lambda e: e.type),
                ("Summary", _summary),
            ]
        )

    def show(self, events: list[HistoryEvent]) -> None:
        """Show `events`; when they extend what is shown, only the new ones are appended."""
        shown = self.records
        if shown and len(events) >= len(shown) and events[: len(shown)] == shown:
            self.append_records(events[len(shown) :])
        else:
            self.set_records(events)

    def row_of_seq(self, seq: int) -> int:
        """The row of the event `seq`, or -1 (seqs are 1-based and contiguous)."""
        i = seq - self.records[0].seq if self.records else -1
        if 0 <= i < len(self.records) and self.records[i].seq == seq:
            return i
        for j, e in enumerate(self.records):
            if e.seq == seq:
                return j
        return -1
