"""A signal's headers stay with its own row: under concurrent senders, and after a signal id is reused."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
import pytest

from harvest_engine import (
    ApplicationError,
    ExecutionOutcome,
    HistoryCaps,
    PostgresRuntime,
    RetryPolicy,
    RunState,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.interceptors import (
    DecisionCall,
    DecisionResult,
    Interceptor,
    SignalCall,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from harvest_engine import Runtime
    from tests.stores import Databases

R = TypeVar("R")


@workflow
async def inbox(ctx: WorkflowContext, _: Any) -> list[str]:
    got = [str(await ctx.wait_for_signal("note"))]
    got.append(str(await ctx.wait_for_signal("note")))
    return got


class Stamp(Interceptor):
    """Signals carry ``who``: this sender's name, or none when `who` is empty."""

    def __init__(self, who: str = "") -> None:
        self.who = who
        self.seen: list[list[dict[str, str]]] = []

    def signal(self, call: SignalCall, proceed: Callable[[SignalCall], R]) -> R:
        if self.who:
            call.headers["who"] = self.who
        return proceed(call)

    def decision(
        self, call: DecisionCall, proceed: Callable[[DecisionCall], DecisionResult]
    ) -> DecisionResult:
        self.seen.append([dict(h) for h in call.signal_headers])
        return proceed(call)


def _headers_by_payload(dsn: str) -> dict[str, str | None]:
    """Each staged signal's payload and the ``who`` its header row holds, read with psycopg."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT s.payload, h.headers FROM harvest_signals s LEFT JOIN harvest_headers h "
            "ON h.exec_id = s.exec_id AND h.kind = 'signal' AND h.ref = s.id::text"
        ).fetchall()
    return {str(p): None if h is None else str(h) for p, h in rows}


def _wait_for_lock_waits(dsn: str, count: int) -> None:
    deadline = time.monotonic() + 20
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone()
            if row is not None and row[0] >= count:
                return
            time.sleep(0.01)
    raise AssertionError(f"{count} senders never waited on the run's row")


@pytest.mark.timeout(60)
def test_concurrent_signals_keep_their_own_headers_on_postgres(pg_dsn: str) -> None:
    # The run's row is held by a third connection while A (by workflow id:
    # it stages before locking the row) and B (by exec id: it locks first)
    # wait. B then commits between A's insert and A's headers: a lookup of
    # "the run's newest signal" gave B's row A's headers.
    a_rt = PostgresRuntime.connect(pg_dsn, interceptors=[Stamp("A")])
    b_rt = PostgresRuntime.connect(pg_dsn, interceptors=[Stamp("B")])
    try:
        a_rt.register_workflow(inbox)
        b_rt.register_workflow(inbox)
        run = a_rt.start_workflow_with_id("inbox", "box", None)
        with psycopg.connect(pg_dsn) as holder:
            holder.execute(
                "SELECT 1 FROM harvest_executions WHERE exec_id = %s FOR UPDATE",
                (str(run),),
            )
            b = threading.Thread(target=b_rt.send_signal, args=(run, "note", "from B"))
            b.start()
            _wait_for_lock_waits(pg_dsn, 1)
            a = threading.Thread(
                target=a_rt.send_signal_by_workflow_id,
                args=("inbox", "box", "note", "from A"),
            )
            a.start()
            _wait_for_lock_waits(pg_dsn, 2)
            holder.commit()
        b.join(20)
        a.join(20)
        assert _headers_by_payload(pg_dsn) == {
            '"from A"': '{"who":"A"}',
            '"from B"': '{"who":"B"}',
        }
    finally:
        a_rt.close()
        b_rt.close()


async def test_a_later_signal_never_takes_a_delivered_ones_headers(
    databases: Databases, db_path: Path
) -> None:
    # On SQLite a signal id is reused once the newest signal row is deleted
    # at delivery; a header row left behind became the new signal's.
    stamp = Stamp("A")
    rt: Runtime = (
        SqliteRuntime.open(db_path, interceptors=[stamp])
        if databases.server is None
        else PostgresRuntime.connect(databases.dsn(db_path), interceptors=[stamp])
    )
    with rt:
        rt.register_workflow(inbox)
        run = rt.start_workflow("inbox", None)
        assert await rt.run_until_blocked(run) == RunState.WaitingSignal(name="note")
        rt.send_signal(run, "note", "first")
        assert await rt.run_until_blocked(run) == RunState.WaitingSignal(name="note")
        stamp.who = ""
        stamp.seen.clear()
        rt.send_signal(run, "note", "second")
        await rt.run_until_blocked(run)
        assert stamp.seen == [[]]


@workflow
async def hand_off(ctx: WorkflowContext, seen: list[Any]) -> Any:
    got = await ctx.wait_for_signal("item")
    if got == "last":
        return [*seen, got]
    ctx.continue_as_new([*seen, got])


def _stamped(databases: Databases, db_path: Path, stamp: Stamp) -> Runtime:
    if databases.server is None:
        return SqliteRuntime.open(db_path, interceptors=[stamp])
    return PostgresRuntime.connect(databases.dsn(db_path), interceptors=[stamp])


async def test_a_signal_handed_to_a_successor_keeps_its_headers(
    databases: Databases, db_path: Path
) -> None:
    # Room for three signals in the hand-off decision: "last" is backlog and
    # moves to the successor run; its header row moved with it.
    stamp = Stamp("A")
    with _stamped(databases, db_path, stamp) as rt:
        rt.register_workflow(hand_off)
        rt.set_history_caps(HistoryCaps(max_events=4, max_bytes=None))
        first = rt.start_workflow("hand_off", [])
        for item in ("a", "b", "c", "last"):
            rt.send_signal(first, "item", item)
        stamp.who = ""
        stamp.seen.clear()
        await rt.run_until_blocked(first)
        successor = rt.successor(first)
        assert successor is not None
        await rt.run_until_blocked(successor)
        assert stamp.seen[-1] == [{"who": "A"}]
        assert rt.outcome(successor) == ExecutionOutcome.Completed(output=["a", "last"])


@workflow(retry=RetryPolicy(max_attempts=2, initial_interval="1ms"))
async def fails_first(ctx: WorkflowContext, _: Any) -> Any:
    got = await ctx.wait_for_signal("item")
    if ctx.info().attempt == 1:
        raise ApplicationError("the first attempt fails")
    return got


async def test_a_signal_a_retry_takes_over_keeps_its_headers(
    databases: Databases, db_path: Path
) -> None:
    # The byte cap stops the failing decision's intake after the big first
    # signal: "b" is still staged when the run fails, and is staged again on
    # the retry's run with its header row.
    stamp = Stamp("A")
    with _stamped(databases, db_path, stamp) as rt:
        rt.register_workflow(fails_first)
        rt.set_history_caps(HistoryCaps(max_events=None, max_bytes=200))
        first = rt.start_workflow("fails_first", None)
        for item in ("x" * 300, "b"):
            rt.send_signal(first, "item", item)
        await rt.run_until_blocked(first)
        retry = rt.successor(first)
        assert retry is not None
        stamp.who = ""
        stamp.seen.clear()
        await asyncio.sleep(0.01)  # the retry's backoff
        await rt.run_until_blocked(retry)
        assert stamp.seen[0] == [{"who": "A"}]
