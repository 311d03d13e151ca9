"""The hops of a client's signal round trip on Postgres carry no needless wake or read.

A client's command notice wakes only the serving worker's command applier
(the run loop follows the applier's commit, so it does not take the
worker's connection for a pass's reads ahead of the command's transaction).
The reply's notice carries the reply, so the client reads nothing after
its wake (one that does not fit is read as before).
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import psycopg
from psycopg import pq

from harvest_engine import HarvestClient, PostgresRuntime
from harvest_engine.runtime.waker import Waker
from harvest_engine.store.postgres import notify, pipelined
from harvest_engine.store.postgres.client_queue import PostgresCommandQueue
from tests.engine.test_postgres_client_notices import Reads, Serving, parked
from tests.engine.test_postgres_statement_cost import sent_messages

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from harvest_engine.store.rows import CommandHint


async def test_wake_commands_sets_only_the_appliers_event() -> None:
    waker = Waker()
    applier = asyncio.Event()
    run_loop = waker.attach(applier)
    waker.wake_commands()
    assert applier.is_set()
    assert not run_loop.is_set()
    waker.wake_all()
    assert run_loop.is_set()
    waker.detach()


def _heard(event: threading.Event, seconds: float = 5.0) -> bool:
    return event.wait(seconds)


def test_a_clients_command_notice_calls_on_command_not_on_wake(pg_dsn: str) -> None:
    woke, commanded = threading.Event(), threading.Event()
    named: list[CommandHint | None] = []

    def on_command(hint: CommandHint | None) -> None:
        named.append(hint)
        commanded.set()

    # The serving runtime's way: its Peers name the applier's wake.
    peers = notify.Peers(on_command=on_command)
    listener = notify.Listener(pg_dsn, "me", woke.set).told(peers)
    try:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_notify(%s, %s)", (notify.CHANNEL, notify.COMMAND_NOTICE)
            )
            assert _heard(commanded)
            assert named == [None]  # an older client's notice names no row
            time.sleep(0.1)
            assert not woke.is_set()
            conn.execute("SELECT pg_notify(%s, 'another worker')", (notify.CHANNEL,))
            assert _heard(woke)
    finally:
        listener.stop()


def test_reply_notice_payloads_read_back() -> None:
    assert notify.reply_notice('3:a:b{"ok":1}') == ("a:b", '{"ok":1}')
    assert notify.reply_notice("3:a:b") == ("a:b", None)  # too long to carry
    assert notify.reply_notice("abc") == ("abc", None)  # an older worker's bare id
    assert notify.reply_notice("9:abc") == ("9:abc", None)


async def test_a_signals_reply_comes_in_its_notice_with_no_read(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Serving(pg_dsn):
        with HarvestClient.connect(pg_dsn) as client:
            exec_id = await client.start_workflow("parked", timeout="5s")
            reads = Reads(monkeypatch, client._queue, "reply")
            await client.send_signal(exec_id, "go", 7, timeout="5s")
            assert reads.count == 0


def test_the_reply_notice_carries_a_reply_that_fits(pg_dsn: str) -> None:
    PostgresRuntime.connect(pg_dsn).close()  # the schema
    long_reply = '{"ok":"' + "x" * notify.REPLY_NOTICE_BYTES + '"}'
    heard = []
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"LISTEN {notify.REPLY_CHANNEL}")
        for command_id, reply in (
            ("id:1", '{"ok":null}'),
            ("id:2", long_reply),
            ("id:3", "~hc1:c2VhbGVk"),  # a codec's: the client's connection decodes it
        ):
            row = conn.execute(
                "INSERT INTO harvest_commands (command_id, kind, args, submitted_at) "
                "VALUES (%s, 'k', '{}', 0) RETURNING id",
                (command_id,),
            ).fetchone()
            assert row is not None
            conn.execute(notify.FINISH_COMMAND, (1, reply, None, row[0]))
            heard += [n.payload for n in conn.notifies(timeout=2, stop_after=1)]
    assert [notify.reply_notice(p) for p in heard] == [
        ("id:1", '{"ok":null}'),
        ("id:2", None),  # too long for a notice: the client reads its row
        ("id:3", None),
    ]


def test_a_pipelined_sync_is_one_round_trip(pg_dsn: str, tmp_path: Path) -> None:
    # A nested pipeline synced twice (entering, then leaving with nothing
    # more to send): every transaction's check of its appends paid two.
    trace = tmp_path / "libpq.trace"
    with psycopg.connect(pg_dsn, autocommit=True) as conn, conn.pipeline():
        first = conn.execute("SELECT 1")
        with trace.open("w") as out:
            conn.pgconn.trace(out.fileno())
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
            try:
                pipelined.sync(conn)
                second = pipelined.settled(conn, "SELECT 2")
            finally:
                conn.pgconn.untrace()
        assert first.fetchone() == (1,)
        assert second.fetchone() == (2,)
    assert sent_messages(trace)["Sync"] == 2  # one each


def test_a_worker_that_lost_a_commands_claim_does_not_wait_for_its_run(
    pg_dsn: str,
) -> None:
    # The claim and the run's lock travel in one round trip; the lock is
    # taken only by the claim's winner, so the loser moves on at once.
    rt = PostgresRuntime.connect(pg_dsn)
    try:
        rt.register_workflow(parked)
        exec_id = str(rt.start_workflow("parked"))
        queue = PostgresCommandQueue.connect(pg_dsn)
        queue.submit("c-1", "send_signal", "{}", datetime.now(UTC))
        queue.close()
        with psycopg.connect(pg_dsn) as winner:
            (row_id,) = winner.execute(
                "SELECT id FROM harvest_commands WHERE command_id = 'c-1' FOR UPDATE"
            ).fetchone()
            winner.execute(
                "SELECT 1 FROM harvest_executions WHERE exec_id = %s FOR UPDATE",
                (exec_id,),
            )
            claimed: list[bool] = []

            def loser() -> None:
                with rt.store.write_together() as txn:
                    claimed.append(txn.claim_command(row_id, [exec_id]))

            thread = threading.Thread(target=loser)
            thread.start()
            thread.join(2.0)
            finished = not thread.is_alive()
            winner.rollback()  # (before, the loser waited for this)
            thread.join()
            assert finished
            assert claimed == [False]
        with rt.store.write_together() as txn:  # the winner gave up: taken now
            assert txn.claim_command(row_id, [exec_id])
    finally:
        rt.close()
