"""The run_closed hook: every way a run is sealed is told once, after its commit, on both stores."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from harvest_engine import (
    ExecutionFilter,
    HarvestClient,
    PostgresRuntime,
    Queue,
    RunState,
    SqliteRuntime,
    StartOptions,
    WorkflowContext,
    workflow,
)
from harvest_engine.contrib.opentelemetry import MetricsInterceptor, TracingInterceptor
from harvest_engine.interceptors import ClientCommandCall, Interceptor, RunClosedCall
from harvest_engine.runtime.deciding import children

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from harvest_engine import ManualClock
    from tests.stores import Databases

R = TypeVar("R")


@workflow
async def idle(ctx: WorkflowContext, _: None) -> str:
    return str(await ctx.wait_for_signal("go"))


@workflow
async def held(ctx: WorkflowContext, _: None) -> str:
    return str(await ctx.wait_for_signal("go"))


@workflow
async def napper(ctx: WorkflowContext, _: None) -> str:
    await ctx.sleep("1h")  # a decision recorded: a point to reset to
    return str(await ctx.wait_for_signal("go"))


@workflow(execution_timeout="1m")
async def slow(ctx: WorkflowContext, _: None) -> str:
    return str(await ctx.wait_for_signal("never"))


@workflow
async def parent(ctx: WorkflowContext, _: None) -> str:
    await ctx.spawn_child_workflow_detached(
        idle, None, "request_cancel", workflow_id="the-child"
    )
    return "done"


class Closings(Interceptor):
    """Records each run_closed call; stamps a header on client commands."""

    def __init__(self) -> None:
        self.closed: list[RunClosedCall] = []

    def run_closed(self, call: RunClosedCall) -> None:
        self.closed.append(call)

    async def client_command(
        self,
        call: ClientCommandCall,
        proceed: Callable[[ClientCommandCall], Awaitable[R]],
    ) -> R:
        call.headers["sent_by"] = call.kind
        return await proceed(call)

    def by_run(self) -> dict[str, tuple[str, bool]]:
        found: dict[str, tuple[str, bool]] = {}
        for call in self.closed:
            assert call.exec_id not in found, f"{call.exec_id} was told twice"
            found[call.exec_id] = (call.state, call.decided)
        return found


def open_runtime(
    databases: Databases,
    db_path: Path,
    clock: ManualClock,
    interceptors: list[Interceptor],
) -> SqliteRuntime:
    if databases.server is None:
        rt = SqliteRuntime.open(db_path, clock=clock, interceptors=interceptors)
    else:
        dsn = databases.dsn(db_path)
        rt = PostgresRuntime.connect(dsn, clock=clock, interceptors=interceptors)
    for fn in (idle, held, napper, slow, parent):
        rt.register_workflow(fn)
    rt.register_queue(Queue("later", concurrency=1))
    return rt


def open_client(
    databases: Databases, db_path: Path, interceptors: list[Interceptor]
) -> HarvestClient:
    if databases.server is None:
        return HarvestClient.open(db_path, interceptors=interceptors)
    return HarvestClient.connect(databases.dsn(db_path), interceptors=interceptors)


def closed_counts(reader: InMemoryMetricReader) -> dict[tuple[str, str], int]:
    data = reader.get_metrics_data()
    assert data is not None
    return {
        (str(attrs["workflow"]), str(attrs["state"])): int(point.value)
        for metric in data.resource_metrics[0].scope_metrics[0].metrics
        if metric.name == "harvest.runs.closed"
        for point in metric.data.data_points
        for attrs in [point.attributes or {}]
    }


async def test_every_way_a_run_is_sealed_is_told_once(
    databases: Databases, db_path: Path, clock: ManualClock
) -> None:
    closings = Closings()
    reader = InMemoryMetricReader()
    metrics = MetricsInterceptor(MeterProvider(metric_readers=[reader]))
    rt = open_runtime(databases, db_path, clock, [closings, metrics])
    try:
        done = str(rt.start_workflow("idle", None))
        await rt.run_until_blocked(done)
        rt.send_signal(done, "go", 1)
        assert isinstance(await rt.run_until_blocked(done), RunState.Completed)

        ended = str(rt.start_workflow("idle", None))
        await rt.run_until_blocked(ended)
        rt.terminate(ended, "by hand")

        bulk = [str(rt.start_workflow("held", None)) for _ in range(2)]
        await rt.run_until_blocked(bulk[0])  # one decided, one never decided
        assert rt.terminate_many(ExecutionFilter().workflow_name("held"), "all") == 2

        old = str(rt.start_workflow("napper", None))
        await rt.run_until_blocked(old)
        fresh = str(rt.reset(old, reason="again"))

        queued = str(
            rt.start_workflow_with_options(
                "idle", None, StartOptions(queue="later", start_delay="1h")
            ).exec_id
        )
        rt.cancel(queued, "never mind")  # ENQUEUED: sealed at once, no decision

        undecided = str(rt.start_workflow("idle", None))
        rt.cancel(undecided, "before its first decision")
        assert isinstance(await rt.run_until_blocked(undecided), RunState.Cancelled)

        replaced = str(rt.start_workflow_with_id("idle", "one-of-a-kind", None))
        policy = "TERMINATE_IF_RUNNING"  # the new start replaces the RUNNING run
        rt.start_workflow_with_reuse_policy("idle", "one-of-a-kind", None, policy)

        late = str(rt.start_workflow("slow", None))
        await rt.run_until_blocked(late)
        clock.advance(120)
        assert isinstance(await rt.run_until_blocked(late), RunState.TimedOut)

        top = str(rt.start_workflow("parent", None))
        assert isinstance(await rt.run_until_blocked(top), RunState.Completed)
        (child,) = [
            d.exec_id
            for d in rt.list_executions(
                ExecutionFilter().workflow_id("the-child")
            ).executions
        ]
    finally:
        rt.close()

    assert closings.by_run() == {
        done: ("COMPLETED", True),
        ended: ("TERMINATED", False),
        bulk[0]: ("TERMINATED", False),
        bulk[1]: ("TERMINATED", False),
        old: ("TERMINATED", False),
        queued: ("CANCELLED", False),
        undecided: ("CANCELLED", True),  # its first decision sealed it
        replaced: ("CONTINUED_AS_NEW", False),
        late: ("TIMED_OUT", False),
        top: ("COMPLETED", True),
        str(child): (
            "CANCELLED",
            False,
        ),  # by its parent's close, in the parent's cycle
    }
    assert fresh not in closings.by_run()  # the reset's new run still runs
    told = {call.exec_id: call for call in closings.closed}
    assert told[ended].workflow_name == "idle"
    assert told[ended].workflow_id == ended
    assert told[late].closed_at == clock.now().replace(
        tzinfo=told[late].closed_at.tzinfo
    )
    assert closed_counts(reader) == {
        ("idle", "COMPLETED"): 1,
        ("idle", "TERMINATED"): 1,
        ("held", "TERMINATED"): 2,
        ("napper", "TERMINATED"): 1,
        ("idle", "CANCELLED"): 3,
        ("idle", "CONTINUED_AS_NEW"): 1,
        ("slow", "TIMED_OUT"): 1,
        ("parent", "COMPLETED"): 1,
    }


async def test_a_rolled_back_seal_is_not_told(
    databases: Databases, db_path: Path, clock: ManualClock
) -> None:
    closings = Closings()
    rt = open_runtime(databases, db_path, clock, [closings])
    try:
        exec_id = str(rt.start_workflow("idle", None))
        await rt.run_until_blocked(exec_id)
        ends = rt._engine.ends  # noqa: SLF001 - the seal path itself, to roll it back

        def seal_then_fail() -> None:
            with rt.store.write() as txn:
                children.hard_seal(txn, exec_id, "TERMINATED", "x", clock.now(), ends)
                raise RuntimeError("rolled back")

        with pytest.raises(RuntimeError, match="rolled back"):
            seal_then_fail()
        assert closings.closed == []
        rt.terminate(exec_id, "for real")
    finally:
        rt.close()
    assert closings.by_run() == {exec_id: ("TERMINATED", False)}


async def test_a_failing_hook_is_logged_and_the_run_still_ends(
    databases: Databases,
    db_path: Path,
    clock: ManualClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(Interceptor):
        def run_closed(self, call: RunClosedCall) -> None:
            raise ValueError("a bug in the hook")

    rt = open_runtime(databases, db_path, clock, [Broken()])
    try:
        exec_id = str(rt.start_workflow("idle", None))
        with caplog.at_level(logging.ERROR, logger="harvest_engine.interceptors"):
            rt.terminate(exec_id, "stop")
        assert rt.describe(exec_id).state == "TERMINATED"
    finally:
        rt.close()
    assert "a run_closed hook failed" in caplog.text


async def test_client_commands_applied_by_the_server_are_told_with_their_headers(
    databases: Databases, db_path: Path, clock: ManualClock
) -> None:
    server = Closings()
    reader = InMemoryMetricReader()
    metrics = MetricsInterceptor(MeterProvider(metric_readers=[reader]))
    rt = open_runtime(databases, db_path, clock, [server, metrics])
    client = open_client(databases, db_path, [Closings()])
    stop = asyncio.Event()
    serving = asyncio.create_task(rt.serve(stop, poll_interval="5ms"))
    try:
        ended = str(await client.start_workflow("idle", None))
        bulk = [str(await client.start_workflow("held", None)) for _ in range(2)]
        old = str(await client.start_workflow("napper", None))
        queued = str(
            (
                await client.start_workflow_with_options(
                    "idle", None, StartOptions(queue="later", start_delay="1h")
                )
            ).exec_id
        )
        await client.terminate(ended, "by a client")
        assert (
            await client.terminate_many(ExecutionFilter().workflow_name("held"), "all")
            == 2
        )
        await client.reset(old, reason="again")
        await client.cancel(queued, "never mind")
    finally:
        stop.set()
        await asyncio.wait_for(serving, 10)
        client.close()
        rt.close()
    assert server.by_run() == {
        ended: ("TERMINATED", False),
        bulk[0]: ("TERMINATED", False),
        bulk[1]: ("TERMINATED", False),
        old: ("TERMINATED", False),
        queued: ("CANCELLED", False),
    }
    causes = {call.exec_id: call.cause.get("sent_by") for call in server.closed}
    assert causes == {
        ended: "terminate",
        bulk[0]: "terminate_many",
        bulk[1]: "terminate_many",
        old: "reset",
        queued: "cancel",
    }
    assert closed_counts(reader) == {
        ("idle", "TERMINATED"): 1,
        ("held", "TERMINATED"): 2,
        ("napper", "TERMINATED"): 1,
        ("idle", "CANCELLED"): 1,
    }


async def test_a_terminated_run_gets_a_last_run_workflow_span(
    databases: Databases, db_path: Path, clock: ManualClock
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rt = open_runtime(databases, db_path, clock, [TracingInterceptor(provider)])
    client = open_client(databases, db_path, [TracingInterceptor(provider)])
    stop = asyncio.Event()
    serving = asyncio.create_task(rt.serve(stop, poll_interval="5ms"))
    try:
        exec_id = str(await client.start_workflow("idle", None))
        done = str(await client.start_workflow("idle", None))
        await client.send_signal(done, "go", 1)
        assert await client.result(done, timeout="10s") is not None
        with provider.get_tracer("web").start_as_current_span("DELETE /runs"):
            await client.terminate(exec_id, "stop")
    finally:
        stop.set()
        await asyncio.wait_for(serving, 10)
        client.close()
        rt.close()
    spans = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans if s.context is not None}

    def of_run(run: str, name: str) -> list[Any]:
        return [
            s
            for s in spans
            if s.name == name and (s.attributes or {}).get("harvest.run_id") == run
        ]

    (start,) = of_run(exec_id, "StartWorkflow:idle")
    (last,) = [
        s
        for s in of_run(exec_id, "RunWorkflow:idle")
        if (s.attributes or {}).get("harvest.state") == "TERMINATED"
    ]
    assert last.parent is not None
    assert by_id[last.parent.span_id] is start  # in the run's own trace
    (command,) = [s for s in spans if s.name == "ClientCommand:terminate"]
    assert command.context is not None
    assert [link.context.span_id for link in last.links] == [command.context.span_id]
    # A run its own decision ended is marked by that decision's span alone.
    marked = [
        s
        for s in of_run(done, "RunWorkflow:idle")
        if (s.attributes or {}).get("harvest.state")
    ]
    assert len(marked) == 1
    assert marked[0].attributes is not None
    assert marked[0].attributes["harvest.attempt"] == 1
