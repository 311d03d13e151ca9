"""The rows a run's progress events project: its events and stream values, in the decision's transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvest_engine.events import HistoryEvent
    from harvest_engine.store.txn_protocol import WriteTxn

# The history events whose rows readers outside the run see.
PROGRESS_EVENTS = frozenset({"EventSet", "StreamWritten", "StreamClosed"})


def project_progress(txn: WriteTxn, exec_id: str, event: HistoryEvent) -> None:
    """Write the row an EventSet, StreamWritten or StreamClosed event stands for."""
    attrs = event.attrs
    key = str(attrs["key"])
    if event.type == "EventSet":
        txn.set_run_event(exec_id, key, attrs.get("value"), event.seq)
    else:
        txn.put_stream_item(
            exec_id,
            key,
            int(attrs["position"]),
            attrs.get("value"),
            closed=event.type == "StreamClosed",
        )
