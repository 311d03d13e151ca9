"""pydantic v2 models as payloads: decoded from type hints everywhere, refused by field, stored as JSON."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import BaseModel, Field

from harvest_engine import (
    ActivityContext,
    ExecutionFilter,
    ExecutionOutcome,
    HarvestClient,
    PayloadInvalid,
    PostgresRuntime,
    RunState,
    SignalWithStart,
    SqliteRuntime,
    WorkflowContext,
    WorkflowReplayer,
    activity,
    workflow,
)

if TYPE_CHECKING:
    from pathlib import Path

    from harvest_engine import ManualClock
    from tests.stores import Databases

Open = Callable[..., SqliteRuntime]


class Item(BaseModel):
    sku: str
    qty: int = Field(gt=0)


class Order(BaseModel):
    id: str
    items: list[Item]


class Receipt(BaseModel):
    order_id: str
    total: int


class Note(BaseModel):
    text: str


@activity
def price(ctx: ActivityContext, order: Order) -> Receipt:
    assert isinstance(order, Order)
    return Receipt(order_id=order.id, total=sum(item.qty for item in order.items))


@workflow
async def receipt_of(ctx: WorkflowContext, order: Order) -> Receipt:
    assert isinstance(order, Order)
    return await ctx.execute_activity(price, order)


@workflow
async def checkout(ctx: WorkflowContext, order: Order) -> dict[str, Any]:
    """Every kind of payload: input, activity, child, signal, handler, query, update."""
    assert isinstance(order, Order)
    notes: list[Note] = []

    def on_note(note: Note) -> None:
        assert isinstance(note, Note)
        notes.append(note)

    async def rename(note: Note) -> Note:
        assert isinstance(note, Note)
        return Note(text=note.text.upper())

    ctx.register_signal_handler("note", on_note)
    ctx.register_query("first_item", lambda: order.items[0])
    ctx.register_update_handler("rename", None, rename)
    receipt = await ctx.execute_activity(price, order)
    assert isinstance(receipt, Receipt)
    child = await ctx.spawn_child_workflow(receipt_of, order)
    assert isinstance(child, Receipt)
    approval = await ctx.receive_signal("approve", type=Note)
    assert isinstance(approval, Note)
    return {"receipt": receipt, "child": child, "approval": approval, "notes": notes}


ORDER = Order(id="o1", items=[Item(sku="a", qty=2), Item(sku="b", qty=3)])


def registered(rt: SqliteRuntime) -> SqliteRuntime:
    rt.register_workflow(checkout)
    rt.register_workflow(receipt_of)
    rt.register_activity(price)
    return rt


async def test_a_model_round_trips_through_every_kind_of_payload(open_rt: Open) -> None:
    rt = registered(open_rt())
    exec_id = rt.start_workflow("checkout", ORDER)
    assert await rt.run_until_blocked(exec_id) == RunState.WaitingSignal(name="approve")
    rt.send_signal(exec_id, "note", Note(text="gift wrap"))
    assert await rt.query(exec_id, "first_item") == {"sku": "a", "qty": 2}
    assert await rt.update(exec_id, "rename", Note(text="ok")) == {"text": "OK"}
    rt.send_signal(exec_id, "approve", Note(text="yes"))

    done = await rt.run_until_blocked(exec_id)

    assert done == RunState.Completed(
        output={
            "receipt": {"order_id": "o1", "total": 5},
            "child": {"order_id": "o1", "total": 5},
            "approval": {"text": "yes"},
            "notes": [{"text": "gift wrap"}],
        }
    )
    # Histories stay plain JSON: the stored start input is the model's dump.
    started = rt.load_history(exec_id)[0]
    assert started.attrs["input"] == ORDER.model_dump(mode="json")
    WorkflowReplayer([checkout, receipt_of]).replay(rt.load_history(exec_id))


async def test_a_start_input_that_does_not_validate_is_refused_by_field_and_writes_nothing(
    open_rt: Open,
) -> None:
    rt = registered(open_rt())
    bad = {"id": "o2", "items": [{"sku": "a", "qty": 0}]}

    with pytest.raises(PayloadInvalid) as refused:
        rt.start_workflow("checkout", bad)

    assert refused.value.field == "items.0.qty"
    assert refused.value.model == "Order"
    assert "greater than 0" in str(refused.value)
    assert rt.list_executions(ExecutionFilter()).executions == []


async def test_an_update_input_that_does_not_validate_is_refused_and_records_nothing(
    open_rt: Open,
) -> None:
    rt = registered(open_rt())
    exec_id = rt.start_workflow("checkout", ORDER)
    await rt.run_until_blocked(exec_id)
    before = len(rt.load_history(exec_id))

    with pytest.raises(PayloadInvalid) as refused:
        await rt.update(exec_id, "rename", {"txt": "typo"})

    assert refused.value.field == "text"
    assert len(rt.load_history(exec_id)) == before


async def test_an_activity_input_that_does_not_validate_fails_the_attempt_naming_the_field(
    open_rt: Open,
) -> None:
    @workflow
    async def raw_caller(ctx: WorkflowContext, _: Any) -> Any:
        return await ctx.execute_activity(price, {"id": "o3", "items": "none"})

    rt = open_rt()
    rt.register_workflow(raw_caller)
    rt.register_activity(price)
    exec_id = rt.start_workflow("raw_caller", None)

    failed = await rt.run_until_blocked(exec_id)

    assert isinstance(failed, RunState.Failed)
    assert "PayloadInvalid" in failed.error.type
    assert "items" in failed.error.message


@activity
def stamp(ctx: ActivityContext, note: Note) -> Note:
    assert isinstance(note, Note)
    return Note(text=f"{note.text}!")


@workflow
async def relay(ctx: WorkflowContext, note: Note) -> Note:
    """The kinds the first test leaves out, each typed by a model.

    A local activity, a query argument, an event, a stream, continue-as-new;
    its start, signals and updates come through a client's command queue.
    """
    assert isinstance(note, Note)

    def echo(asked: Note) -> Note:
        assert isinstance(asked, Note)
        return Note(text=f"{note.text}/{asked.text}")

    ctx.register_query("echo", echo)

    async def append(extra: Note) -> Note:
        assert isinstance(extra, Note)
        return Note(text=note.text + extra.text)

    ctx.register_update_handler("append", None, append)
    stamped = await ctx.execute_local_activity(stamp, note)
    assert isinstance(stamped, Note)
    ctx.set_event("stamped", stamped)
    ctx.write_stream("notes", stamped)
    if note.text.startswith("again"):
        ctx.continue_as_new(Note(text=note.text.removeprefix("again ")))
    ask = await ctx.receive_signal("go", type=Note)
    assert isinstance(ask, Note)
    return Note(text=f"{stamped.text} {ask.text}")


async def test_models_cross_a_client_and_every_other_kind_of_payload(
    databases: Databases, db_path: Path, clock: ManualClock
) -> None:
    if databases.server is None:
        rt: SqliteRuntime = SqliteRuntime.open(db_path, clock=clock)
        client = HarvestClient.open(db_path)
    else:
        rt = PostgresRuntime.connect(databases.dsn(db_path), clock=clock)
        client = HarvestClient.connect(databases.dsn(db_path))
    rt.register_workflow(relay)
    rt.register_activity(stamp)
    stop = asyncio.Event()
    serving = asyncio.create_task(rt.serve(stop, poll_interval="5ms"))
    try:
        first = await client.start_workflow("relay", Note(text="again hi"))
        for _ in range(1000):
            outcome = client.outcome(first)
            if not isinstance(outcome, ExecutionOutcome.Running):
                break
            await asyncio.sleep(0.01)
        assert outcome == ExecutionOutcome.Terminated(state="CONTINUED_AS_NEW")
        successor = client.describe(first).successor
        assert successor is not None
        assert await client.get_event(successor, "stamped", timeout="10s") == {
            "text": "hi!"
        }
        assert await client.query(successor, "echo", Note(text="q")) == {"text": "hi/q"}
        assert await client.update(successor, "append", Note(text="+u")) == {
            "text": "hi+u"
        }
        with pytest.raises(PayloadInvalid) as refused:
            await client.update(successor, "append", {"txt": "typo"})
        assert refused.value.field == "text"
        started = await client.signal_with_start(
            SignalWithStart(
                workflow_name="relay",
                workflow_id="sws",
                input=Note(text="sws"),
                signal_name="go",
                signal_payload=Note(text="now"),
            )
        )
        await client.send_signal(successor, "go", Note(text="done"))
        assert (await client.result(successor, timeout="10s")).output == {
            "text": "hi! done"
        }
        assert (await client.result(started.exec_id, timeout="10s")).output == {
            "text": "sws! now"
        }
        streamed = [
            value async for _, value in client.read_stream(started.exec_id, "notes")
        ]
        assert streamed == [{"text": "sws!"}]
        with pytest.raises(PayloadInvalid) as bad_start:
            await client.start_workflow("relay", {"txt": "typo"})
        assert bad_start.value.field == "text"
        # Nothing of the refused start and update was written.
        assert len(rt.list_executions(ExecutionFilter()).executions) == 3
        assert not any(
            e.type.startswith("Update") and "typo" in str(e.attrs)
            for e in rt.load_history(successor)
        )
    finally:
        stop.set()
        await asyncio.wait_for(serving, 10)
        client.close()
        rt.close()
