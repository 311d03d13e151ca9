"""A client's signal is applied and decided in one transaction by the serving process (both stores).

Issue 28's client round trip (send_signal -> the client sees the run
complete): the applier used to commit the signal, wake the run loop, and the
loop's pass read its lists and decided the run in a second commit. Now the
decision the signal unblocks runs in a savepoint of the signal command's own
transaction: one commit (and one wake of the client) carries the reply and
the run's end. On Postgres the run's row is locked and kept once for both,
and a cached instance's decision reads no events: the round trips are counted.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from psycopg import pq

from harvest_engine import (
    ManualClock,
    PostgresRuntime,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.client.wakes import SAFETY_RECHECK_SECONDS
from harvest_engine.runtime.serving import commands
from harvest_engine.store.postgres.client_queue import PostgresCommandQueue
from harvest_engine.store.postgres.store import PostgresStore
from harvest_engine.store.sql.commands import POSTGRES_COMMANDS, SQLITE_COMMANDS
from harvest_engine.store.sqlite.client_queue import CommandQueue
from tests.engine.served_store import ServedStore, served_store
from tests.engine.test_postgres_statement_cost import sent_messages

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterator
    from pathlib import Path

    from harvest_engine import HarvestClient

# Applying one signal command and the decision it unblocks on Postgres, the
# worker connection's messages, the pending-commands read included (measured:
# 11 statements, 4 round trips: the pending read, the claim with the run's
# lock, the reply, the commit with the appends' check; before the held signal
# (held_signals.py: the decision takes it in, no row is written) and the
# check sent with the COMMIT (appends_check.py), 16 and 5-6; before sig3 8-9
# round trips, the claim and the lock apart and every check two syncs; the
# command alone and then a pass deciding the run took 23 and 16, the serving
# loop's own reads besides).
SIGNAL_STATEMENTS = 11
SIGNAL_ROUND_TRIPS = 4


@workflow
async def until_go(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("go")


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServedStore]:
    for found in served_store(request, tmp_path, clock=ManualClock()):
        found.rt.register_workflow(until_go)
        yield found


async def _parked(served: ServedStore) -> str:
    """A run parked on "go" (started and first decided in this process)."""
    exec_id = served.rt.start_workflow("until_go")
    await served.rt.run_until_blocked(exec_id)
    return str(exec_id)


async def _queued_signal(
    served: ServedStore, client: HarvestClient, exec_id: str, payload: int
) -> asyncio.Task[None]:
    """The client's send_signal, waiting for its reply once its row is queued."""
    sending = asyncio.create_task(client.send_signal(exec_id, "go", payload))
    for _ in range(500):
        if served.rows("SELECT 1 FROM harvest_commands WHERE applied_at IS NULL"):
            return sending
        await asyncio.sleep(0.002)
    raise AssertionError("the signal command was never queued")


async def test_the_signal_and_the_decision_it_unblocks_commit_together(
    served: ServedStore,
) -> None:
    commits: list[int] = []
    served.rt.store.add_commit_listener(lambda: commits.append(1))
    with served.client() as client:
        exec_id = await _parked(served)
        sending = await _queued_signal(served, client, exec_id, 7)
        commits.clear()
        applied = commands.apply_pending(served.rt._engine, decide=True)  # noqa: SLF001
        assert applied == 1
        assert len(commits) == 1  # the reply and the run's end: one commit
        await asyncio.wait_for(sending, 5)
        outcome = await client.result(exec_id, timeout="5s")
    assert outcome.output == 7  # type: ignore[union-attr]
    assert served.rows("SELECT state FROM harvest_executions") == [("COMPLETED",)]


async def test_a_command_applied_without_deciding_leaves_the_run_to_the_loop(
    served: ServedStore,
) -> None:
    with served.client() as client:
        exec_id = await _parked(served)
        sending = await _queued_signal(served, client, exec_id, 1)
        commands.apply_pending(served.rt._engine)  # noqa: SLF001 - the simulation's way
        await asyncio.wait_for(sending, 5)
        assert served.rows("SELECT state FROM harvest_executions") == [("RUNNING",)]
        await served.rt.run_until_blocked(exec_id)
    assert served.rows("SELECT state FROM harvest_executions") == [("COMPLETED",)]


async def test_a_signal_command_and_its_decision_take_few_round_trips_on_postgres(
    pg_server: Any, tmp_path: Path
) -> None:
    dsn = pg_server.create_database()
    found = ServedStore(dsn, postgres=True, clock=ManualClock())
    try:
        found.rt.register_workflow(until_go)
        with found.client() as client:
            exec_id = await _parked(found)
            # Once decided, the instance is cached: the warm path a served run takes.
            sending = await _queued_signal(found, client, exec_id, 5)
            store = found.rt.store
            assert isinstance(store, PostgresStore)
            pgconn = store.connection.pgconn
            trace = tmp_path / "libpq.trace"
            with trace.open("w") as out:
                pgconn.trace(out.fileno())
                pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
                try:
                    commands.apply_pending(found.rt._engine, decide=True)  # noqa: SLF001
                finally:
                    pgconn.untrace()
            await asyncio.wait_for(sending, 5)
        assert found.rows("SELECT state FROM harvest_executions") == [("COMPLETED",)]
    finally:
        found.rt.close()
        pg_server.drop_database(dsn)
    sent = sent_messages(trace)
    statements = sent["Execute"] + sent["Query"]
    round_trips = sent["Sync"] + sent["Flush"]
    assert statements <= SIGNAL_STATEMENTS, sent
    assert round_trips <= SIGNAL_ROUND_TRIPS, sent
    # The run is locked and read by `exec_id = $1`, whose prepared plan
    # Postgres keeps; by `= ANY($1)` each execution was planned again.
    assert "exec_id = ANY" not in trace.read_text()


def test_a_queued_command_is_not_synced_on_its_own_but_a_withdrawal_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The serving process's FULL commit of the reply syncs the WAL up to the
    # command (client_queue.QUEUE_SYNCHRONOUS); a withdrawal is told at once.
    path = tmp_path / "queue.db"
    SqliteRuntime.open(path).close()
    queue = CommandQueue.open(path)
    seen: list[int] = []
    withdraw = SQLITE_COMMANDS.withdraw

    def watched(conn: sqlite3.Connection, command_id: str) -> bool:
        seen.append(conn.execute("PRAGMA synchronous").fetchone()[0])
        return withdraw(conn, command_id)

    monkeypatch.setattr(SQLITE_COMMANDS, "withdraw", watched)
    try:
        assert queue._conn.execute("PRAGMA synchronous").fetchone() == (1,)  # noqa: SLF001
        queue.submit("c-1", "send_signal", "{}", datetime.now(UTC))
        assert queue.withdraw("c-1")
        assert seen == [2]  # FULL while withdrawing
        assert queue._conn.execute("PRAGMA synchronous").fetchone() == (1,)  # noqa: SLF001
    finally:
        queue.close()


def test_a_queued_command_waits_for_no_wal_flush_on_postgres_but_a_withdrawal_does(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    PostgresRuntime.connect(pg_dsn).close()
    queue = PostgresCommandQueue.connect(pg_dsn)
    seen: list[str] = []
    withdraw = POSTGRES_COMMANDS.withdraw

    def watched(conn: Any, command_id: str) -> bool:
        seen.append(conn.execute("SHOW synchronous_commit").fetchone()[0])
        return withdraw(conn, command_id)

    monkeypatch.setattr(POSTGRES_COMMANDS, "withdraw", watched)

    def setting() -> str:
        return str(queue._conn.execute("SHOW synchronous_commit").fetchone()[0])  # noqa: SLF001

    try:
        assert setting() == "off"
        queue.submit("c-1", "send_signal", "{}", datetime.now(UTC))
        assert queue.withdraw("c-1")
        assert seen == ["on"]
        assert setting() == "off"
    finally:
        queue.close()


async def test_a_postgres_client_reads_its_reply_only_when_no_notice_carries_it(
    pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Listening before it queues, the client takes the reply from its notice
    # (no read; before sig-perf2 it read once after the notice); a retry
    # under an id already applied reads at once, with no notice to wait for.
    reads: list[str] = []
    real = POSTGRES_COMMANDS.reply

    def counted(conn: Any, command_id: str) -> Any:
        reads.append(command_id)
        return real(conn, command_id)

    monkeypatch.setattr(POSTGRES_COMMANDS, "reply", counted)
    dsn = pg_server.create_database()
    found = ServedStore(dsn, postgres=True)
    try:
        found.rt.register_workflow(until_go)
        with found.client() as client:
            async with found.serving():
                exec_id = await client.start_workflow("until_go", command_id="s-1")
                assert reads == []
                began = time.monotonic()
                again = await client.start_workflow("until_go", command_id="s-1")
                assert time.monotonic() - began < SAFETY_RECHECK_SECONDS
                assert reads == ["s-1"]
        assert again == exec_id
    finally:
        found.rt.close()
        pg_server.drop_database(dsn)
