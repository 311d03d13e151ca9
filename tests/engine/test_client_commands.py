"""HarvestClient beside a serving runtime: commands as rows, applied once, same results and errors."""

from __future__ import annotations

import asyncio
import pickle
import sqlite3
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ActivityContext,
    CommandTimedOut,
    ExecutionId,
    ExecutionNotFound,
    ExecutionOutcome,
    HarvestClient,
    InvalidSignal,
    NotAHarvestDatabase,
    PayloadTooLarge,
    QueryNotFound,
    SignalWithStart,
    SqliteError,
    SqliteRuntime,
    StartOptions,
    UnknownWorkflow,
    UpdateRejected,
    UpdateWithStart,
    WorkflowAlreadyStarted,
    WorkflowContext,
    WorkflowIdReusePolicy,
    WorkflowNotRunning,
    activity,
    update,
    workflow,
)
from harvest_engine.shaping import MAX_INPUT_BYTES_CEILING

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path


@workflow
async def counter(ctx: WorkflowContext, start: int) -> int:
    total = start
    while True:
        step = await ctx.wait_for_signal("add")
        if step is None:
            return total
        total += step


@workflow
async def greeter(ctx: WorkflowContext, name: str) -> str:
    return f"hello {name}"


@workflow
async def box(ctx: WorkflowContext, _: Any) -> Any:
    value: dict[str, Any] = {"items": []}

    def peek() -> Any:
        return value

    async def put(item: str) -> int:
        value["items"].append(item)
        return len(value["items"])

    def check(item: str) -> None:
        if not item:
            raise ValueError("an empty item")

    ctx.register_query("peek", peek)
    ctx.register_update_handler("put", check, put)
    await ctx.wait_for_signal("close")
    return "closed"


@update(workflow="counter")
def double(ctx: WorkflowContext, value: int) -> int:
    return value * 2


def register(rt: SqliteRuntime) -> None:
    rt.register_workflow(counter)
    rt.register_workflow(greeter)
    rt.register_workflow(box)
    rt.register_update(double)


@asynccontextmanager
async def served(db_path: Path) -> AsyncIterator[SqliteRuntime]:
    """A runtime serving `db_path` in this loop (its own connection, like another process)."""
    with SqliteRuntime.open(db_path) as rt:
        register(rt)
        stop = asyncio.Event()
        server = asyncio.create_task(rt.serve(stop, poll_interval="5ms"))
        try:
            yield rt
        finally:
            stop.set()
            await asyncio.wait_for(server, 10)


def file_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every harvest table but the command queue."""
    conn = sqlite3.connect(path)
    try:
        tables = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            if r[0].startswith("harvest_") and r[0] != "harvest_commands"
        ]
        return {t: conn.execute(f"SELECT * FROM {t}").fetchall() for t in tables}
    finally:
        conn.close()


def command_rows(path: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT kind, applied_at IS NOT NULL, exec_id FROM harvest_commands ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


async def until(check: Callable[[], bool], within: float = 5.0) -> None:
    """Wait for `check()` to hold; fail after `within` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():  # noqa: ASYNC110 - polls a file, no event to await
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.005)


@pytest.fixture
def made(db_path: Path) -> Path:
    """A harvest file at the current schema (a runtime opened and closed it)."""
    SqliteRuntime.open(db_path).close()
    return db_path


async def test_a_client_starts_signals_and_awaits_the_result(made: Path) -> None:
    async with served(made):
        with HarvestClient.open(made) as client:
            exec_id = await client.start_workflow("counter", 1)
            await client.send_signal(exec_id, "add", 2)
            await client.send_signal(exec_id, "add", None)
            outcome = await client.result(exec_id, timeout="5s")
            assert outcome == ExecutionOutcome.Completed(output=3)
            assert client.outcome(exec_id) == outcome
            assert client.describe(exec_id).state == "COMPLETED"
            types = [e.type for e in client.load_history(exec_id)]
            assert types[0] == "WorkflowStarted"
            assert types[-1] == "WorkflowCompleted"
            listed = client.list_executions().executions
            assert [str(r.exec_id) for r in listed] == [str(exec_id)]


async def test_queries_and_updates_run_in_the_serving_process(made: Path) -> None:
    async with served(made) as rt:
        with HarvestClient.open(made) as client:
            exec_id = await client.start_workflow("box")
            # Each update runs on its own replay (its state does not reach the body).
            assert await client.update(exec_id, "put", "apple") == 1
            assert await client.update(exec_id, "put", "pear") == 1
            assert await client.query(exec_id, "peek") == {"items": []}
            with pytest.raises(UpdateRejected, match="an empty item"):
                await client.update(exec_id, "put", "")
            with pytest.raises(QueryNotFound) as caught:
                await client.query(exec_id, "nope")
            assert caught.value.exec_id == exec_id
            # The same call in-process raises the same error with the same fields.
            with pytest.raises(QueryNotFound) as local:
                await rt.query(exec_id, "nope")
            assert local.value.message == caught.value.message


async def test_cancel_and_terminate_from_a_client(made: Path) -> None:
    async with served(made):
        with HarvestClient.open(made) as client:
            first = await client.start_workflow("box")
            second = await client.start_workflow("box")
            await client.cancel(first, "no longer needed")
            await client.terminate(second, "stop now")
            assert await client.result(first, timeout="5s") == (
                ExecutionOutcome.Terminated(state="CANCELLED")
            )
            assert client.outcome(second) == ExecutionOutcome.Terminated(
                state="TERMINATED"
            )
            with pytest.raises(WorkflowNotRunning):
                await client.cancel(second)


async def test_typed_errors_cross_with_their_fields_and_pickle(made: Path) -> None:
    async with served(made):
        with HarvestClient.open(made) as client:
            with pytest.raises(UnknownWorkflow):
                await client.start_workflow("no_such_workflow")
            with pytest.raises(ExecutionNotFound) as missing:
                await client.send_signal("not-a-run", "add", 1)
            assert missing.value.exec_id == ExecutionId("not-a-run")
            again = pickle.loads(pickle.dumps(missing.value))
            assert again.exec_id == ExecutionId("not-a-run")
            prior = await client.start_workflow_with_id("greeter", "order-1", "x")
            with pytest.raises(WorkflowAlreadyStarted) as refused:
                await client.start_workflow_with_reuse_policy(
                    "greeter", "order-1", "y", WorkflowIdReusePolicy.REJECT_DUPLICATE
                )
            assert refused.value.exec_id == prior
            with pytest.raises(WorkflowNotRunning):
                await client.update(prior, "double", 4)


async def test_start_variants_return_what_the_runtime_returns(made: Path) -> None:
    async with served(made) as rt:
        with HarvestClient.open(made) as client:
            first = await client.start_workflow_with_id("box", "shop-1", None)
            same = await client.start_workflow_with_id("box", "shop-1", None)
            assert same == first
            opts = await client.start_workflow_with_options(
                "box",
                None,
                StartOptions(workflow_id="shop-2", memo={"who": "ann"}),
            )
            assert opts.started_fresh
            assert rt.describe(opts.exec_id).memo.value == {"who": "ann"}
            with pytest.raises(WorkflowAlreadyStarted) as refused:
                await client.start_workflow_with_reuse_policy(
                    "box", "shop-1", None, "REJECT_DUPLICATE"
                )
            assert refused.value.exec_id == first
            sws = await client.signal_with_start(
                SignalWithStart(
                    workflow_name="box",
                    workflow_id="shop-3",
                    signal_name="close",
                    idempotency_key="k1",
                )
            )
            assert sws.started_fresh
            assert sws.signal_delivered
            assert await client.result(sws.exec_id, timeout="5s") == (
                ExecutionOutcome.Completed(output="closed")
            )
            delivery = await client.send_signal_by_workflow_id(
                "box", "shop-1", "close", None, "k2"
            )
            assert delivery.exec_id == first
            assert delivery.delivered
            assert not await client.send_signal_idempotent(first, "close", None, "k2")


async def test_bad_input_is_refused_in_the_client_before_anything_is_written(
    made: Path,
) -> None:
    before = command_rows(made)
    with HarvestClient.open(made) as client:
        with pytest.raises(PayloadTooLarge):
            # Over the ceiling of every workflow's cap (`max_input_bytes`): a
            # client does not know the workflow's own cap, the server checks it.
            await client.start_workflow("greeter", "x" * (MAX_INPUT_BYTES_CEILING + 1))
        with pytest.raises(InvalidSignal):
            await client.send_signal("some-run", " ", 1)
        with pytest.raises(ExecutionNotFound):
            await client.cancel("  ")
        with pytest.raises(UpdateRejected):
            await client.update("some-run", "", 1)
        with pytest.raises(TypeError):
            await client.terminate("some-run", 42)  # type: ignore[arg-type]
    assert command_rows(made) == before


async def test_no_server_times_out_and_the_command_applies_later_exactly_once(
    made: Path,
) -> None:
    with HarvestClient.open(made) as client:
        with pytest.raises(CommandTimedOut) as timed_out:
            await client.start_workflow("greeter", "late", timeout="50ms")
        error = timed_out.value
        assert isinstance(error, SqliteError)
        assert pickle.loads(pickle.dumps(error)).command_id == error.command_id
        assert [r[:2] for r in command_rows(made)] == [("start_workflow", False)]
        async with served(made) as rt:

            def applied() -> bool:
                return all(r[1] for r in command_rows(made))

            await until(applied)
            runs = rt.list_executions().executions
            assert len(runs) == 1
            assert await client.result(runs[0].exec_id, timeout="5s") == (
                ExecutionOutcome.Completed(output="hello late")
            )
    # Reopened and served again: the applied command is not applied twice.
    async with served(made) as rt:
        await asyncio.sleep(0.05)
        assert len(rt.list_executions().executions) == 1


async def test_a_client_writes_nothing_but_command_rows(made: Path) -> None:
    with SqliteRuntime.open(made) as rt:
        register(rt)
        exec_id = rt.start_workflow("greeter", "ann")
        await rt.run_until_blocked(exec_id)
    before = file_rows(made)
    with HarvestClient.open(made) as client:
        client.outcome(exec_id)
        client.describe(exec_id)
        client.load_history(exec_id)
        client.list_executions()
        await client.result(exec_id)
        with pytest.raises(CommandTimedOut):
            await client.send_signal(exec_id, "add", 1, timeout="10ms")
    assert file_rows(made) == before


def test_a_client_refuses_a_missing_or_foreign_file(tmp_path: Path) -> None:
    with pytest.raises(NotAHarvestDatabase):
        HarvestClient.open(tmp_path / "missing.db")
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(NotAHarvestDatabase):
        HarvestClient.open(foreign)
    assert not (tmp_path / "missing.db").exists()


async def test_update_with_start_starts_and_updates_in_one_go(
    open_rt: Callable[..., SqliteRuntime],
) -> None:
    rt = open_rt()
    register(rt)
    request = UpdateWithStart(
        workflow_name="box", workflow_id="cart-1", update_name="put", update_arg="a"
    )
    first = await rt.update_with_start(request)
    assert first.started_fresh
    assert first.result == 1
    again = await rt.update_with_start(request)
    assert again.exec_id == first.exec_id
    assert not again.started_fresh
    assert again.result == 1
    types = [e.type for e in rt.load_history(first.exec_id)]
    assert types.count("UpdateCompleted") == 2


async def test_a_rejected_update_with_start_still_leaves_the_started_run(
    open_rt: Callable[..., SqliteRuntime],
) -> None:
    rt = open_rt()
    register(rt)
    with pytest.raises(UpdateRejected):
        await rt.update_with_start(
            UpdateWithStart(
                workflow_name="box",
                workflow_id="cart-2",
                update_name="put",
                update_arg="",
            )
        )
    runs = rt.list_executions().executions
    assert [r.workflow_id for r in runs] == ["cart-2"]
    assert "UpdateAdmitted" not in [e.type for e in rt.load_history(runs[0].exec_id)]


async def test_update_with_start_from_a_client(made: Path) -> None:
    async with served(made):
        with HarvestClient.open(made) as client:
            outcome = await client.update_with_start(
                UpdateWithStart(
                    workflow_name="box",
                    workflow_id="cart-3",
                    update_name="put",
                    update_arg="pear",
                )
            )
            assert outcome.started_fresh
            assert outcome.result == 1
            assert client.describe(outcome.exec_id).workflow_id == "cart-3"


async def test_applied_commands_go_with_the_purge_of_their_run(made: Path) -> None:
    async with served(made) as rt:
        with HarvestClient.open(made) as client:
            exec_id = await client.start_workflow("greeter", "bye")
            await client.result(exec_id, timeout="5s")
        assert [r[2] for r in command_rows(made)] == [str(exec_id)]
        assert rt.purge_terminal(0) == 1
    assert command_rows(made) == []


async def test_a_command_is_applied_while_a_long_activity_body_runs(
    made: Path,
) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    @activity
    async def slow_model(ctx: ActivityContext, _: Any) -> str:
        started.set()
        await release.wait()
        return "answer"

    @workflow
    async def asks(ctx: WorkflowContext, _: Any) -> Any:
        return await ctx.execute_activity(slow_model)

    async with served(made) as rt:
        rt.register_workflow(asks)
        rt.register_activity(slow_model)
        asking = rt.start_workflow("asks")
        await asyncio.wait_for(started.wait(), 5)
        with HarvestClient.open(made) as client:
            greeted = await client.start_workflow("greeter", "meanwhile", timeout="5s")
            assert await client.result(greeted, timeout="5s") == (
                ExecutionOutcome.Completed(output="hello meanwhile")
            )
            assert not release.is_set()
            release.set()
            assert await client.result(asking, timeout="5s") == (
                ExecutionOutcome.Completed(output="answer")
            )


async def test_a_client_refuses_bad_payloads_and_names_before_queueing(
    made: Path,
) -> None:
    from harvest_engine import InvalidName, PayloadNotJson

    with HarvestClient.open(made) as client:
        with pytest.raises(PayloadNotJson, match=r"at \$\.price"):
            await client.start_workflow("greeter", {"price": float("nan")})
        with pytest.raises(PayloadNotJson):
            await client.send_signal("some-run", "add", {1: "a", "1": "b"})
        with pytest.raises(InvalidName):
            await client.start_workflow_with_id("greeter", "x" * 1001, None)
        with pytest.raises(InvalidName):
            await client.start_workflow(2**64)
    with SqliteRuntime.open(made) as rt:
        assert rt.list_executions().executions == []


async def test_served_ago_reads_the_serving_heartbeat_and_grows_once_it_stops(
    made: Path,
) -> None:
    with HarvestClient.open(made) as client:
        async with served(made):
            await until(lambda: (client.served_ago() or 99.0) < 1.5, within=3.0)
            ago = client.served_ago()
            assert ago is not None
            assert 0.0 <= ago < 1.5
        await asyncio.sleep(1.2)
        after = client.served_ago()
        assert after is None or after >= 1.0
