"""ProgressTxn: the progress rows a decision writes (events, streams, labels, details; issue 28).

Part of `WriteTxn` (txn_protocol.py): each is written in the transaction
that records the event it derives from (store/sql/progress.py).
"""

from __future__ import annotations

from typing import Protocol


class ProgressTxn(Protocol):
    """Run events, stream items and a run's labels, inside one write transaction."""

    def set_run_event(self, exec_id: str, key: str, value: object, seq: int) -> None:
        """Set event `key` of the run to `value` (recorded by the event at `seq`)."""
        ...

    def put_stream_item(
        self, exec_id: str, key: str, position: int, value: object, *, closed: bool
    ) -> None:
        """Write a stream's value at `position`, or (closed) its closing row."""
        ...

    def set_run_labels(
        self, exec_id: str, summary: str | None, details: str | None
    ) -> None:
        """Label a run with its start's summary and details."""
        ...

    def set_current_details(self, exec_id: str, text: str | None) -> None:
        """Store what the run says it is doing now."""
        ...
