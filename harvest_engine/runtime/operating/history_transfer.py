"""Move one closed run's history between stores: the export document, its checks, the import.

The document is the one the desktop inspector exports (``"format":
"harvest-history/1"``, the run's ids and its ``events`` as the stores'
event JSON), so `WorkflowReplayer.replay(text)` and `harvest replay
--history` read it too. `harvest export` adds a ``run`` object with what
the events alone do not say (the stored state, output and error, the
current memo and search attributes), which the import writes back.

An imported run is a closed record: the import refuses a history that does
not end its run, writes the row already sealed (no decision, task or timer
is ever due for it), so no worker drives it; it only reads and replays.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.errors import ExecutionExists, InvalidHistoryFile
from harvest_engine.events import TERMINAL_EVENTS, HistoryEvent
from harvest_engine.states import TERMINAL_STATES, ExecutionId
from harvest_engine.store.rows import NewExecution
from harvest_engine.timestamps import from_text, to_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.store.records import ExecutionDetail

FORMAT = "harvest-history/1"
"""The ``format`` key of an export (the same as the desktop inspector's)."""

_STATE_OF_EVENT = {
    "WorkflowCompleted": "COMPLETED",
    "WorkflowFailed": "FAILED",
    "WorkflowCancelled": "CANCELLED",
    "WorkflowExecutionTimedOut": "TIMED_OUT",
    "WorkflowContinuedAsNew": "CONTINUED_AS_NEW",
    "WorkflowTerminated": "TERMINATED",
}
# A terminated or replaced run also ends in WorkflowCancelled: the row says which.
_STATES_OF_EVENT = {
    "WorkflowCancelled": {"CANCELLED", "TERMINATED", "CONTINUED_AS_NEW"},
    "WorkflowFailed": {"FAILED"},
}


@dataclass(frozen=True)
class ImportedRun:
    """A checked history document: the run's row and its events."""

    new: NewExecution
    events: list[HistoryEvent]
    state: str
    closed_at: datetime
    output: str | None
    error: str | None
    fields: dict[str, Any]


def export_document(detail: ExecutionDetail, events: Sequence[HistoryEvent]) -> str:
    """The export text of one run: its ids, the row's closing values, its events."""
    run: dict[str, Any] = {
        "state": detail.state,
        "closed_at": None if detail.closed_at is None else to_text(detail.closed_at),
        "output": detail.output.get(),
        "error": detail.error.get(),
        "memo": detail.memo.get(),
        "search_attributes": detail.search_attributes.get(),
        "successor": None if detail.successor is None else str(detail.successor),
    }
    doc = {
        "format": FORMAT,
        "exec_id": str(detail.exec_id),
        "workflow_name": detail.workflow_name,
        "run": run,
        "events": [e.to_dict() for e in events],
    }
    return payloads.dumps(doc)


def parse_document(text: str | bytes, path: str) -> ImportedRun:
    """Check an export and turn it into the row and events to write.

    Raises:
        InvalidHistoryFile: not JSON, no events, an event that cannot be
            read, seqs that are not 1, 2, 3, ..., no WorkflowStarted first,
            a run that has not ended, or a ``run`` object that contradicts
            the events; the reason names which.

    """

    def bad(reason: str) -> InvalidHistoryFile:
        return InvalidHistoryFile(path=path, reason=reason)

    try:
        data = payloads.loads(text)
    except ValueError as exc:
        raise bad(f"not JSON ({exc})") from exc
    items = data.get("events") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise bad("it holds no list of events")
    events: list[HistoryEvent] = []
    for index, item in enumerate(items):
        try:
            event = HistoryEvent.from_json(item)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise bad(f"event {index + 1} cannot be read ({exc!r})") from exc
        if not isinstance(item.get("attrs", {}), dict):
            raise bad(f"event {index + 1} has attrs that are not an object")
        if event.seq != index + 1:
            raise bad(
                f"event {index + 1} has seq {event.seq} (seqs must run 1, 2, 3, ...)"
            )
        events.append(event)
    first, last = events[0], events[-1]
    if first.type != "WorkflowStarted":
        raise bad(f"the first event is {first.type}, not WorkflowStarted")
    if last.type not in TERMINAL_EVENTS:
        raise bad(
            f"the run has not ended (last event {last.type}); only a closed run is imported"
        )
    if any(e.type in TERMINAL_EVENTS for e in events[:-1]):
        raise bad("an event follows the run's end")
    run = data.get("run") if isinstance(data, dict) else None
    if run is not None and not isinstance(run, dict):
        raise bad("its run is not an object")
    return _imported(events, run or {}, bad)


def _imported(events: list[HistoryEvent], run: dict[str, Any], bad: Any) -> ImportedRun:
    """The row of a checked history, from its WorkflowStarted, its end and `run`."""
    started, last = events[0].attrs, events[-1]
    try:
        exec_id = str(ExecutionId.parse(str(started["exec_id"])))
        name, wid = str(started["workflow_name"]), str(started["workflow_id"])
        encoded_input = payloads.dumps(started.get("input"))
        attempt = int(started.get("attempt", 1))
    except (KeyError, TypeError, ValueError) as exc:
        raise bad(f"WorkflowStarted lacks the run's ids ({exc!r})") from exc
    state = run.get("state") or _STATE_OF_EVENT[last.type]
    allowed = _STATES_OF_EVENT.get(last.type, {_STATE_OF_EVENT[last.type]})
    if state not in TERMINAL_STATES or state not in allowed:
        raise bad(f"its state {state!r} does not match its last event {last.type}")
    output, error = run.get("output"), run.get("error")
    if last.type == "WorkflowCompleted" and "output" not in run:
        output = last.attrs.get("output")
    if "error" not in run and "error" in last.attrs:
        error = last.attrs["error"]
    try:
        closed_at = from_text(run["closed_at"]) if run.get("closed_at") else last.at
    except (TypeError, ValueError) as exc:
        raise bad(f"its closed_at cannot be read ({exc})") from exc
    memo = run.get("memo", started.get("memo"))
    attrs = run.get("search_attributes", started.get("search_attributes"))
    successor = run.get("successor") or last.attrs.get("successor")
    fields: dict[str, Any] = {
        "memo": None if memo is None else payloads.dumps(memo),
        "search_attributes": None if attrs is None else payloads.dumps(attrs),
    }
    if successor is not None:
        fields["successor"] = str(successor)
    if state in ("CANCELLED", "TERMINATED"):
        fields["cancel_reason"] = last.attrs.get("reason")
    new = NewExecution(
        exec_id=exec_id,
        workflow_name=name,
        workflow_id=wid,
        input=encoded_input,
        attempt=attempt,
        parent_exec_id=started.get("parent_exec_id"),
        predecessor=started.get("predecessor"),
    )
    return ImportedRun(
        new=new,
        events=events,
        state=state,
        closed_at=closed_at,
        output=None
        if output is None and state != "COMPLETED"
        else payloads.dumps(output),
        error=None if error is None else payloads.dumps(error),
        fields=fields,
    )


def import_run(store: DurableStore, run: ImportedRun, target: str) -> ExecutionId:
    """Write `run` into `store` in one transaction, already sealed.

    Raises:
        ExecutionExists: the store holds a run with this id (nothing written).

    """
    exec_id = run.new.exec_id
    with store.write() as txn:
        if txn.execution(exec_id) is not None:
            raise ExecutionExists(exec_id=exec_id, target=target)
        txn.insert_execution(run.new, run.events[0])
        txn.append_events(exec_id, run.events[1:])
        txn.seal(
            exec_id,
            run.state,
            closed_at=run.closed_at,
            output=run.output,
            error=run.error,
        )
        txn.update_execution(exec_id, **run.fields)
    return ExecutionId(exec_id)
