"""The Progress tab: a run's events (key, value) and its streams' values as they arrive."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout, QWidget

from harvest_gui.inspect import formatting
from harvest_gui.models.records import RecordTableModel
from harvest_gui.views.tables import record_table

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from harvest_engine import HistoryEvent

STREAM_EVENTS = ("StreamWritten", "StreamClosed")
VALUE_CHARS = 300
"""A value longer than this is cut in its cell (the tooltip shows more)."""
MAX_PAGES = 64
"""Pages of a stream read at one refresh; the rest come at the next (the UI stays responsive)."""


class StreamRow(Protocol):
    """A row the reader's `stream_items` returns (harvest_engine's StreamItem)."""

    @property
    def position(self) -> int:
        """Its place in the stream, from 0."""

    @property
    def value(self) -> Any:
        """The value written (None on the closing row)."""

    @property
    def closed(self) -> bool:
        """Whether this row closes the stream."""


@dataclass(frozen=True)
class StreamValue:
    """One value of one stream, as the table shows it."""

    key: str
    position: int
    value: Any


def stream_keys(history: Sequence[HistoryEvent]) -> list[str]:
    """The run's stream keys, in the order it first wrote to them (from its history)."""
    keys: dict[str, None] = {}
    for event in history:
        if event.type in STREAM_EVENTS:
            key = event.attrs.get("key")
            if isinstance(key, str):
                keys.setdefault(key, None)
    return list(keys)


def _value(value: Any) -> str:
    return formatting.middle(formatting.json_text(value, indent=None), VALUE_CHARS)


class ProgressView(QWidget):
    """Events above, stream values below; stream rows are appended, never re-read.

    `show_progress` is called at each refresh of the run; each stream is
    read on from the position after the last value shown, so a live
    stream's new values appear at the bottom without the table resetting.
    """

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("progressView")
        self.exec_id: str | None = None
        self._next: dict[str, int] = {}  # stream key -> next position to read
        self.closed_streams: set[str] = set()
        self.events_model: RecordTableModel[tuple[str, Any]] = RecordTableModel(
            [("Event", lambda kv: kv[0]), ("Value", lambda kv: _value(kv[1]))]
        )
        self.events_table = record_table("progressEvents", "Run events")
        self.events_table.setModel(self.events_model)
        self.events_table.setColumnWidth(
            0, self.fontMetrics().horizontalAdvance("m") * 16
        )
        self.streams_model: RecordTableModel[StreamValue] = RecordTableModel(
            [
                ("Stream", lambda v: v.key),
                ("#", lambda v: str(v.position)),
                ("Value", lambda v: _value(v.value)),
            ]
        )
        self.streams_table = record_table("progressStreams", "Run stream values")
        self.streams_table.setModel(self.streams_model)
        self.streams_table.setColumnWidth(
            0, self.fontMetrics().horizontalAdvance("m") * 12
        )
        self.streams_table.setColumnWidth(
            1, self.fontMetrics().horizontalAdvance("0") * 7
        )
        self.events_caption = QLabel()
        self.events_caption.setObjectName("progressEventsCaption")
        self.streams_caption = QLabel()
        self.streams_caption.setObjectName("progressStreamsCaption")
        self.streams_caption.setWordWrap(True)
        for caption in (self.events_caption, self.streams_caption):
            caption.setTextFormat(Qt.TextFormat.PlainText)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.events_caption)
        top_layout.addWidget(self.events_table, 1)
        bottom = QWidget()
        bottom_layout = QVBoxLayout(bottom)
        bottom_layout.setContentsMargins(0, 0, 0, 0)
        bottom_layout.addWidget(self.streams_caption)
        bottom_layout.addWidget(self.streams_table, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.setObjectName("progressSplit")
        split.addWidget(top)
        split.addWidget(bottom)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split)
        self._captions()

    def show_progress(
        self,
        exec_id: str,
        events: dict[str, Any],
        history: Sequence[HistoryEvent],
        read_stream: Callable[[str, int], Sequence[StreamRow]],
    ) -> None:
        """Show `exec_id`'s events, and read its streams on from where the table stands.

        `read_stream(key, offset)` returns a page of the stream from `offset`
        (the reader's `stream_items`).
        """
        if exec_id != self.exec_id:
            self.exec_id = exec_id
            self._next = {}
            self.closed_streams = set()
            self.streams_model.set_records([])
        self.events_model.set_records(sorted(events.items()))
        fresh: list[StreamValue] = []
        for key in stream_keys(history):
            if key in self.closed_streams:
                continue
            offset = self._next.get(key, 0)
            for _ in range(MAX_PAGES):
                page = read_stream(key, offset)
                for item in page:
                    if item.closed:
                        self.closed_streams.add(key)
                    else:
                        fresh.append(StreamValue(key, item.position, item.value))
                    offset = item.position + 1
                if not page or key in self.closed_streams:
                    break
            self._next[key] = offset
        if fresh:
            at_bottom = self._scrolled_to_bottom()
            self.streams_model.append_records(fresh)
            if at_bottom:  # follow a live stream, unless the user scrolled up to read
                self.streams_table.scrollToBottom()
        self._captions()

    def _scrolled_to_bottom(self) -> bool:
        bar = self.streams_table.verticalScrollBar()
        return bar.value() >= bar.maximum()

    def _captions(self) -> None:
        n_events = self.events_model.rowCount()
        self.events_caption.setText(
            "Events (ctx.set_event): "
            + (formatting.count(n_events, "event") if n_events else "none set")
        )
        if not self._next:
            self.streams_caption.setText("Streams (ctx.write_stream): none written")
            return
        parts = []
        for key, offset in self._next.items():
            state = "closed" if key in self.closed_streams else "open"
            values = offset - 1 if key in self.closed_streams else offset
            parts.append(f"{key}: {formatting.count(values, 'value')}, {state}")
        self.streams_caption.setText("Streams (ctx.write_stream): " + "; ".join(parts))
