"""Debounced and batched starts: held in the store until their window closes, then one run.

A start of a workflow declared with `debounce=` or `batch=` does not insert
a run. It writes (in one transaction, so a crash loses or doubles no
start) into the held-start row of its key, the workflow name plus its
workflow id ("" for a start without one), which names the run to be:

- debounce: every start inside the window moves the due time to its own
  arrival plus the window and replaces the held input; when no start came
  for a whole window the run starts with the last input.
- batch: every start appends its input; the run starts with the list of
  the inputs in arrival order once `max_size` arrived (in the transaction
  of the last start) or `max_wait` after the first. An input that would
  take the list over the workflow's input cap starts the held batch first
  and opens a new one with it.

Every start of one window returns the same exec id, the id the run will
have (`started_fresh` is true for the start that opened the window). Until
the run starts, the id names no run: `describe` and `outcome` raise
ExecutionNotFound and lists do not show it; `rt.held_starts()` lists what
waits. The release (`release_due`) runs in every serving pass, and the
held rows' due time is part of `next_wakeup`, so nothing polls (a held
start whose code this process lacks is left out of it until its workflow is
registered). A reuse
policy is not consulted: the released run is always a fresh run.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.calls import (
    StartOutcome,
    checked_input,
    checked_memo,
    checked_search_attributes,
)
from harvest_engine.errors import HarvestError
from harvest_engine.names import check_name, check_optional_name
from harvest_engine.runtime.talking.start_calls import insert, new_execution
from harvest_engine.shaping import HeldStart
from harvest_engine.states import ExecutionId
from harvest_engine.store.sql.shaping import HeldRow

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

    from harvest_engine.runtime.engine import Engine
    from harvest_engine.shaping import WorkflowShaping
    from harvest_engine.store.txn_protocol import WriteTxn


def holds(engine: Engine, name: str) -> bool:
    """Whether starts of `name` are held (a registered workflow with debounce or batch)."""
    found = engine.registry.shaping.get(name) if isinstance(name, str) else None
    return found is not None and found.holds_starts


def start(
    engine: Engine,
    name: str,
    workflow_id: str | None,
    input: Any,
    *,
    memo: Any = None,
    search_attributes: Mapping[str, Any] | None = None,
) -> StartOutcome:
    """Hold one start of `name`; the exec id of the run it will join.

    Raises:
        PayloadTooLarge, PayloadTooDeep: the input, memo or attributes over a cap.
        InvalidName: a bad name or id.
    """
    check_name(name, "workflow name")
    check_optional_name(workflow_id, "workflow id")
    engine.registry.workflow(name)
    shaping = engine.registry.shaping_of(name)
    encoded = checked_input(input, limit_bytes=shaping.max_input_bytes)
    memo_text = checked_memo(memo)
    attrs_text = checked_search_attributes(search_attributes)
    key = workflow_id if workflow_id is not None and workflow_id.strip() else ""
    now = engine.clock.now()
    with engine.store.write() as txn:
        row = txn.held_start(name, key)
        if shaping.debounce is not None:
            return _debounce(
                txn, row, name, key, encoded, memo_text, attrs_text, now, shaping
            )
        return _batch(
            engine, txn, row, name, key, encoded, memo_text, attrs_text, now, shaping
        )


def _opened(
    txn: WriteTxn,
    name: str,
    key: str,
    kind: str,
    now: datetime,
    due: datetime,
    extra: dict[str, Any],
) -> HeldRow:
    """A new held row of the key; the concurrent opener's row when it lost the race."""
    row = HeldRow(
        workflow_name=name,
        workflow_id=key,
        exec_id=str(ExecutionId.new()),
        kind=kind,
        opened_at=now,
        due_at=due,
        inputs=0,
        bytes=0,
        input=None,
        memo=extra.get("memo"),
        search_attributes=extra.get("search_attributes"),
    )
    if txn.hold_start(row):
        return row
    found = txn.held_start(name, key)  # another worker opened it first (Postgres)
    return row if found is None else found


def _debounce(
    txn: WriteTxn,
    row: HeldRow | None,
    name: str,
    key: str,
    encoded: str,
    memo: str | None,
    attrs: str | None,
    now: datetime,
    shaping: WorkflowShaping,
) -> StartOutcome:
    assert shaping.debounce is not None
    due = now + shaping.debounce
    fresh = row is None
    if row is None:
        extra = {"memo": memo, "search_attributes": attrs}
        row = _opened(txn, name, key, "debounce", now, due, extra)
    txn.update_held(
        replace(
            row,
            due_at=due,
            inputs=row.inputs + 1,
            bytes=len(encoded),
            input=encoded,
            memo=memo,
            search_attributes=attrs,
        )
    )
    return StartOutcome(ExecutionId(row.exec_id), started_fresh=fresh)


def _batch(
    engine: Engine,
    txn: WriteTxn,
    row: HeldRow | None,
    name: str,
    key: str,
    encoded: str,
    memo: str | None,
    attrs: str | None,
    now: datetime,
    shaping: WorkflowShaping,
) -> StartOutcome:
    batch = shaping.batch
    assert batch is not None
    size = len(encoded.encode("utf-8"))
    if row is not None and _list_bytes(row.bytes + size, row.inputs + 1) > (
        shaping.max_input_bytes
    ):
        release(engine, txn, row)  # the list would go over the cap: start it as it is
        row = None
    fresh = row is None
    if row is None:
        extra = {"memo": memo, "search_attributes": attrs}
        row = _opened(txn, name, key, "batch", now, now + batch.wait, extra)
    position = row.inputs + 1
    txn.add_held_input(row.exec_id, position, encoded, now)
    row = replace(row, inputs=position, bytes=row.bytes + size)
    if position >= batch.max_size:
        release(engine, txn, row)
    else:
        txn.update_held(row)
    return StartOutcome(ExecutionId(row.exec_id), started_fresh=fresh)


def _list_bytes(item_bytes: int, items: int) -> int:
    """The encoded size of a list of `items` encoded values of `item_bytes` together."""
    return item_bytes + max(items - 1, 0) + 2  # the commas and the brackets


def release(engine: Engine, txn: WriteTxn, row: HeldRow) -> ExecutionId:
    """Start the held run in `txn` with its input (the last one, or the batch's list)."""
    if row.kind == "batch":
        encoded = "[" + ",".join(txn.held_inputs(row.exec_id)) + "]"
    else:
        encoded = row.input if row.input is not None else payloads.dumps(None)
    new = new_execution(
        engine,
        row.workflow_name,
        row.workflow_id or None,
        encoded,
        memo=row.memo,
        search_attributes=row.search_attributes,
    )
    workflow_id = row.workflow_id if row.workflow_id.strip() else row.exec_id
    new = replace(new, exec_id=row.exec_id, workflow_id=workflow_id)
    txn.drop_held(row.exec_id)
    return insert(engine, txn, new)


def release_due(
    engine: Engine, now: datetime, missing: set[str] | None = None
) -> tuple[int, HarvestError | None]:
    """Start every held run whose window closed by `now`; (how many, the first error).

    A held start whose workflow this process has not registered waits for
    its code (a process with the code starts it); its workflow's name goes
    into `missing` (refilled each call), which `next_wakeup` then looks
    past, so a serving loop sleeps instead of finding it due every tick.
    Each release is its own transaction; on Postgres the row lock lets one
    worker release it.
    """
    started = 0
    first: HarvestError | None = None
    if missing is not None:
        missing.clear()
    for name, key in engine.store.due_held_starts(now):
        if name not in engine.registry.workflows:
            if missing is not None:
                missing.add(name)
            continue
        try:
            with engine.store.write() as txn:
                row = txn.held_start(name, key)
                if row is None or row.due_at > now:
                    continue  # another worker released it, or a start moved it on
                release(engine, txn, row)
                started += 1
        except HarvestError as exc:
            first = first or exc
    return started, first


def held_starts(engine: Engine) -> list[HeldStart]:
    """Every held start, earliest due first (the facade's `held_starts`)."""
    return [
        HeldStart(
            exec_id=row.exec_id,
            workflow_name=row.workflow_name,
            workflow_id=row.workflow_id,
            kind=row.kind,
            inputs=row.inputs,
            opened_at=row.opened_at,
            due_at=row.due_at,
        )
        for row in engine.store.held_starts()
    ]
