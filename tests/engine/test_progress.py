"""Progress out of a run on both stores: events, streams and summaries, in-process and through a client."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ExecutionOutcome,
    InvalidName,
    StartOptions,
    WorkflowContext,
    WorkflowReplayer,
    workflow,
)
from tests.engine.served_store import ServedStore, served_store

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@workflow
async def reporter(ctx: WorkflowContext, n: int) -> str:
    """Sets events and writes a stream of n values, closing it, between signals."""
    ctx.set_event("phase", "started")
    ctx.set_current_details("warming up")
    for i in range(n):
        ctx.write_stream("tokens", {"i": i})
    await ctx.wait_for_signal("more")
    ctx.write_stream("tokens", "last")
    ctx.close_stream("tokens")
    ctx.set_event("phase", "done")
    ctx.set_current_details("finished the work")
    await ctx.sleep(0, summary="a short nap")
    return "ok"


@workflow
async def never_sets(ctx: WorkflowContext, _: Any) -> str:
    """Ends without setting any event or closing its stream."""
    ctx.write_stream("s", 1)
    await ctx.wait_for_signal("end")
    return "bye"


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServedStore]:
    for found in served_store(request, tmp_path):
        found.rt.register_workflow(reporter)
        found.rt.register_workflow(never_sets)
        yield found


async def test_events_and_stream_in_process(served: ServedStore) -> None:
    rt = served.rt
    exec_id = rt.start_workflow("reporter", 3)
    await rt.run_until_blocked(exec_id)
    assert rt.events(exec_id) == {"phase": "started"}
    assert await rt.get_event(exec_id, "phase") == "started"
    assert await rt.get_event(exec_id, "missing", timeout="20ms") is None
    got: list[tuple[int, Any]] = []

    async def read() -> None:
        async for item in rt.read_stream(exec_id, "tokens"):
            got.append(item)

    reader = asyncio.create_task(read())
    await asyncio.sleep(0.01)
    assert got == [(0, {"i": 0}), (1, {"i": 1}), (2, {"i": 2})]
    rt.send_signal(exec_id, "more")
    await rt.run_until_blocked(exec_id)
    await asyncio.wait_for(reader, 5)
    assert got[-1] == (3, "last")
    resumed = [item async for item in rt.read_stream(exec_id, "tokens", offset=2)]
    assert resumed == [(2, {"i": 2}), (3, "last")]
    assert rt.events(exec_id) == {"phase": "done"}
    detail = rt.describe(exec_id)
    assert detail.current_details == "finished the work"
    history = rt.load_history(exec_id)
    started = next(e for e in history if e.type == "TimerStarted")
    assert started.attrs["summary"] == "a short nap"
    # The history replays alike: the same commands match the recorded events.
    WorkflowReplayer([reporter]).replay(history)


async def test_get_event_waits_and_ends_with_the_run(served: ServedStore) -> None:
    rt = served.rt
    exec_id = rt.start_workflow("never_sets", None)
    await rt.run_until_blocked(exec_id)
    waiting = asyncio.create_task(rt.get_event(exec_id, "phase"))
    values = [v async for v in _take(rt.read_stream(exec_id, "s"), 1)]
    assert values == [(0, 1)]
    rt.send_signal(exec_id, "end")
    await rt.run_until_blocked(exec_id)
    assert await asyncio.wait_for(waiting, 5) is None
    # The run ended without closing the stream: the reader ends after its values.
    assert [v async for v in rt.read_stream(exec_id, "s")] == [(0, 1)]


async def _take(stream: Any, n: int) -> Any:
    count = 0
    async for item in stream:
        yield item
        count += 1
        if count == n:
            return


async def test_client_reads_events_and_streams_woken_by_the_server(
    served: ServedStore,
) -> None:
    rt = served.rt
    async with served.serving():
        with served.client() as client:
            started = await client.start_workflow_with_options(
                "reporter",
                2,
                StartOptions(summary="report 2", details="two values, then one"),
            )
            exec_id = started.exec_id
            assert await client.get_event(exec_id, "phase", timeout="5s") == "started"
            got: list[tuple[int, Any]] = []

            async def read() -> None:
                async for item in client.read_stream(exec_id, "tokens"):
                    got.append(item)

            reader = asyncio.create_task(read())
            await client.send_signal(exec_id, "more")
            await asyncio.wait_for(reader, 10)
            assert got == [(0, {"i": 0}), (1, {"i": 1}), (2, "last")]
            outcome = await client.result(exec_id, timeout="10s")
            assert outcome == ExecutionOutcome.Completed(output="ok")
            assert client.events(exec_id) == {"phase": "done"}
            detail = client.describe(exec_id)
            assert (detail.summary, detail.details) == (
                "report 2",
                "two values, then one",
            )
            assert detail.current_details == "finished the work"
            listed = client.list_executions().executions[0]
            assert listed.summary == "report 2"
    assert rt.describe(exec_id).summary == "report 2"


async def test_bad_keys_and_offsets_are_refused_at_the_call(
    served: ServedStore,
) -> None:
    rt = served.rt
    exec_id = rt.start_workflow("never_sets", None)
    with pytest.raises(InvalidName):
        await rt.get_event(exec_id, "  ")
    with pytest.raises(ValueError, match="offset"):
        rt.read_stream(exec_id, "s", offset=-1)
    with pytest.raises(InvalidName):
        rt.read_stream(exec_id, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        rt.start_workflow_with_options("never_sets", None, StartOptions(summary=5))  # type: ignore[arg-type]
