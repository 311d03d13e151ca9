"""Interceptors: each hook sees its call; headers are stored, survive a reopen and cross from a client."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from harvest_engine import (
    ActivityContext,
    HarvestClient,
    PostgresRuntime,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    WorkflowPanicked,
    activity,
    workflow,
)
from harvest_engine.interceptors import (
    ActivityCall,
    ClientCommandCall,
    DecisionCall,
    DecisionResult,
    Interceptor,
    QueryCall,
    SignalCall,
    StartCall,
    UpdateCall,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from harvest_engine import ManualClock
    from harvest_engine.activity import AttemptResult
    from tests.stores import Databases

R = TypeVar("R")


@activity
async def shout(ctx: ActivityContext, text: str) -> str:
    return text.upper()


@workflow
async def chat(ctx: WorkflowContext, greeting: str) -> str:
    said = [await ctx.execute_activity(shout, greeting)]
    ctx.register_query("said", lambda: list(said))

    async def add(text: str) -> int:
        said.append(text)
        return len(said)

    ctx.register_update_handler("add", None, add)
    reply = await ctx.wait_for_signal("reply")
    said.append(await ctx.execute_activity(shout, str(reply)))
    return " / ".join(said)


class Recorder(Interceptor):
    """Records every call and stamps a header on starts and decisions."""

    def __init__(self, tag: str = "t1") -> None:
        self.tag = tag
        self.calls: list[Any] = []
        self.decided: list[DecisionResult] = []

    def start(self, call: StartCall, proceed: Callable[[StartCall], R]) -> R:
        self.calls.append(call)
        call.headers.setdefault("tag", self.tag)
        return proceed(call)

    def signal(self, call: SignalCall, proceed: Callable[[SignalCall], R]) -> R:
        self.calls.append(call)
        call.headers["signal_tag"] = call.name
        return proceed(call)

    def query(self, call: QueryCall, proceed: Callable[[QueryCall], R]) -> R:
        self.calls.append(call)
        return proceed(call)

    def update(self, call: UpdateCall, proceed: Callable[[UpdateCall], R]) -> R:
        self.calls.append(call)
        return proceed(call)

    def decision(
        self, call: DecisionCall, proceed: Callable[[DecisionCall], DecisionResult]
    ) -> DecisionResult:
        self.calls.append(call)
        call.outbound["decided_by"] = f"{call.exec_id}:{call.first}"
        result = proceed(call)
        self.decided.append(result)
        return result

    async def activity(
        self,
        call: ActivityCall,
        proceed: Callable[[ActivityCall], Awaitable[AttemptResult]],
    ) -> AttemptResult:
        self.calls.append(call)
        return await proceed(call)

    async def client_command(
        self,
        call: ClientCommandCall,
        proceed: Callable[[ClientCommandCall], Awaitable[R]],
    ) -> R:
        self.calls.append(call)
        call.headers["from_client"] = call.kind
        return await proceed(call)

    def of(self, kind: type[Any]) -> list[Any]:
        return [c for c in self.calls if isinstance(c, kind)]


def opener(
    databases: Databases, db_path: Path, clock: ManualClock
) -> Callable[[list[Interceptor]], SqliteRuntime]:
    def open_(interceptors: list[Interceptor]) -> SqliteRuntime:
        if databases.server is None:
            return SqliteRuntime.open(db_path, clock=clock, interceptors=interceptors)
        dsn = databases.dsn(db_path)
        return PostgresRuntime.connect(dsn, clock=clock, interceptors=interceptors)

    return open_


def register(rt: SqliteRuntime) -> None:
    rt.register_workflow(chat)
    rt.register_activity(shout)


async def test_each_hook_sees_its_call_and_headers_survive_a_reopen(
    databases: Databases, db_path: Path, clock: ManualClock
) -> None:
    open_ = opener(databases, db_path, clock)
    first = Recorder()
    rt = open_([first])
    register(rt)
    exec_id = str(rt.start_workflow_with_id("chat", "c-1", "hi"))
    (start,) = first.of(StartCall)
    assert (start.workflow_name, start.workflow_id, start.input) == (
        "chat",
        "c-1",
        "hi",
    )
    assert isinstance(await rt.run_until_blocked(exec_id), RunState.WaitingSignal)
    decision = first.of(DecisionCall)[0]
    assert (decision.exec_id, decision.workflow_id, decision.first) == (
        exec_id,
        "c-1",
        True,
    )
    assert decision.headers == {"tag": "t1"}  # the start's headers, stored with the run
    (attempt,) = first.of(ActivityCall)
    assert (attempt.activity_name, attempt.attempt, attempt.input) == ("shout", 1, "hi")
    # The activity carries what its deciding hook left in `outbound`.
    assert attempt.headers == {"tag": "t1", "decided_by": f"{exec_id}:True"}
    assert await rt.query(exec_id, "said") == ["HI"]
    assert first.of(QueryCall)[0].name == "said"
    assert await rt.update(exec_id, "add", "more") == 2
    assert (first.of(UpdateCall)[0].name, first.of(UpdateCall)[0].arg) == (
        "add",
        "more",
    )
    rt.send_signal(exec_id, "reply", "bye")
    assert (first.of(SignalCall)[0].exec_id, first.of(SignalCall)[0].payload) == (
        exec_id,
        "bye",
    )
    rt.close()

    # Another process (a reopen) reads the headers back from the store.
    second = Recorder(tag="never-used")
    rt = open_([second])
    register(rt)
    state = await rt.run_until_blocked(exec_id)
    assert isinstance(state, RunState.Completed)
    assert state.output.startswith("HI")
    assert state.output.endswith("BYE")
    decision = second.of(DecisionCall)[0]
    assert decision.headers == {"tag": "t1"}
    assert decision.first is False
    # The staged signal's headers were stored with it and read back.
    assert decision.signal_headers == [{"signal_tag": "reply"}]
    assert second.of(ActivityCall)[0].headers["decided_by"] == f"{exec_id}:False"
    assert second.decided[-1].state == "COMPLETED"
    rt.close()


async def test_no_interceptor_stores_no_headers(
    databases: Databases, db_path: Path, clock: ManualClock
) -> None:
    rt = opener(databases, db_path, clock)([])
    register(rt)
    exec_id = str(rt.start_workflow("chat", "hi"))
    await rt.run_until_blocked(exec_id)
    assert rt.store.headers_of(exec_id, "start", "") is None
    assert rt.store.headers_of(exec_id, "activity", "1") is None
    rt.close()


async def test_a_client_commands_headers_reach_the_serving_process(
    databases: Databases, db_path: Path, clock: ManualClock
) -> None:
    server_side = Recorder(tag="server")
    rt = opener(databases, db_path, clock)([server_side])
    register(rt)
    client_side = Recorder()
    client = (
        HarvestClient.open(db_path, interceptors=[client_side])
        if databases.server is None
        else HarvestClient.connect(databases.dsn(db_path), interceptors=[client_side])
    )
    stop = asyncio.Event()
    serving = asyncio.create_task(rt.serve(stop, poll_interval="5ms"))
    try:
        exec_id = str(await client.start_workflow("chat", "hi"))
        await client.send_signal(exec_id, "reply", "bye")
    finally:
        stop.set()
        await asyncio.wait_for(serving, 10)
    command = client_side.of(ClientCommandCall)[0]
    assert command.kind == "start_workflow"
    assert command.args["name"] == "chat"
    start = server_side.of(StartCall)[0]
    # The client's header came along; the server's hook added its own.
    assert start.headers == {"from_client": "start_workflow", "tag": "server"}
    signal = server_side.of(SignalCall)[0]
    assert signal.headers == {"from_client": "send_signal", "signal_tag": "reply"}
    client.close()
    rt.close()


def test_an_interceptor_must_be_one() -> None:
    with pytest.raises(TypeError, match="Interceptor instances"):
        SqliteRuntime.open_in_memory(interceptors=[object()])  # type: ignore[list-item]


class Broken(Interceptor):
    """A decision or activity hook with a bug."""

    def __init__(self, where: str) -> None:
        self.where = where

    def decision(
        self, call: DecisionCall, proceed: Callable[[DecisionCall], DecisionResult]
    ) -> DecisionResult:
        if self.where == "decision":
            raise ValueError("a bug in the decision hook")
        return proceed(call)

    async def activity(
        self,
        call: ActivityCall,
        proceed: Callable[[ActivityCall], Awaitable[AttemptResult]],
    ) -> AttemptResult:
        if self.where == "activity":
            raise ValueError("a bug in the activity hook")
        return await proceed(call)


async def test_a_decision_hooks_bug_is_a_panic_and_the_run_goes_on_without_it(
    databases: Databases, db_path: Path, clock: ManualClock
) -> None:
    open_ = opener(databases, db_path, clock)
    rt = open_([Broken("decision")])
    register(rt)
    exec_id = str(rt.start_workflow("chat", "hi"))
    with pytest.raises(WorkflowPanicked, match="a bug in the decision hook"):
        await rt.run_until_blocked(exec_id)
    assert rt.load_history(exec_id)[-1].type == "WorkflowStarted"  # rolled back
    rt.close()
    rt = open_([])
    register(rt)
    assert isinstance(await rt.run_until_blocked(exec_id), RunState.WaitingSignal)
    rt.close()


async def test_an_activity_hooks_bug_fails_the_attempt(
    databases: Databases, db_path: Path, clock: ManualClock
) -> None:
    rt = opener(databases, db_path, clock)([Broken("activity")])
    register(rt)
    exec_id = str(rt.start_workflow("chat", "hi"))
    state = await rt.run_until_blocked(exec_id)
    assert isinstance(state, RunState.Failed)
    (attempt,) = rt.activity_attempts(exec_id)
    assert attempt.outcome == "FAILED"
    rt.close()


async def test_a_purged_run_takes_its_headers(
    databases: Databases, db_path: Path, clock: ManualClock
) -> None:
    rt = opener(databases, db_path, clock)([Recorder()])
    register(rt)
    exec_id = str(rt.start_workflow("chat", "hi"))
    await rt.run_until_blocked(exec_id)
    assert rt.store.headers_of(exec_id, "start", "") == '{"tag":"t1"}'
    rt.terminate(exec_id, "done")
    clock.advance(3600)
    assert rt.purge_terminal("1m") == 1
    assert rt.store.headers_of(exec_id, "start", "") is None
    assert rt.store.headers_of(exec_id, "activity", "1") is None
    rt.close()
