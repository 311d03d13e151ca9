"""HistoryModel: a run's events (one page of them), seq, time, type and summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_gui.inspect import formatting
from harvest_gui.models.records import RecordTableModel

if TYPE_CHECKING:
    from harvest_engine import HistoryEvent

COL_TYPE = 2


def _summary(event: HistoryEvent) -> str:
    text = event.summary()
    if not text:
        bits = [f"{k}={formatting.json_text(v, None)}" for k, v in event.attrs.items()]
        text = ", ".join(bits)
    return text if len(text) <= 200 else text[:199] + "…"


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
