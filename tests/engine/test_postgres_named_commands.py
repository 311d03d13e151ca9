"""A client's command notice names its row (and the run it signals): the worker claims it unread.

On Postgres the serving worker used to read the command queue when a
client's notice woke it, then claim the command and lock its run: two round
trips before the command's own work. The notice now says
"command:<row id>:<run>", and the applier claims that row, reads it and
locks the run in one. A wake that named no row (an older client, a LISTEN
connection that came back, a poll) still reads the queue, so no command
waits on a lost notice.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine import HarvestClient, PostgresRuntime
from harvest_engine.runtime.serving import commands
from harvest_engine.runtime.waker import Waker
from harvest_engine.store.postgres import notify
from harvest_engine.store.postgres.client_queue import PostgresCommandQueue
from tests.engine.test_postgres_client_notices import Reads, Serving, parked

if TYPE_CHECKING:
    import pytest


def test_a_command_notice_names_its_row_and_run() -> None:
    read = notify.read_command_notice
    assert read("command:12:run-1") == (12, "run-1")
    assert read("command:13:") == (13, "")
    assert read("command:14:a:b") == (14, "a:b")
    assert read("command") is None  # an older client's
    assert read("command:x:run") is None


async def test_the_applier_gets_the_named_rows_only_when_every_wake_named_one() -> None:
    waker = Waker()
    waker.wake_commands((1, "a"))  # nobody serves yet: nothing is kept
    waker.attach(asyncio.Event())
    assert waker.command_hints() is None  # a new loop reads the queue first
    waker.wake_commands((2, "b"))
    waker.wake_commands((3, ""))
    assert waker.command_hints() == [(2, "b"), (3, "")]
    assert waker.command_hints() is None  # woken for another reason: read
    waker.wake_commands((4, "c"))
    waker.wake_commands(None)
    assert waker.command_hints() is None  # a wake named no row: read
    waker.detach()


def test_the_queue_notice_names_the_row_and_the_run_signalled(pg_dsn: str) -> None:
    PostgresRuntime.connect(pg_dsn).close()
    heard: list[str] = []
    with psycopg.connect(pg_dsn, autocommit=True) as listener:
        listener.execute(f"LISTEN {notify.CHANNEL}")
        queue = PostgresCommandQueue.connect(pg_dsn)
        try:
            queue.submit("c-1", "send_signal", "{}", datetime.now(UTC), "run-7")
            queue.submit("c-2", "cancel", "{}", datetime.now(UTC))
            ids = [
                r[0]
                for r in queue._conn.execute(  # noqa: SLF001
                    "SELECT id FROM harvest_commands ORDER BY id"
                ).fetchall()
            ]
        finally:
            queue.close()
        heard = [n.payload for n in listener.notifies(timeout=2, stop_after=2)]
    assert heard == [f"command:{ids[0]}:run-7", f"command:{ids[1]}:"]


async def test_a_served_worker_applies_a_clients_signal_without_reading_the_queue(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Serving(pg_dsn) as rt:
        store_reads = Reads(monkeypatch, rt.store, "pending_commands")
        with HarvestClient.connect(pg_dsn) as client:
            runs = [await client.start_workflow("parked") for _ in range(3)]
            await asyncio.sleep(0.3)  # the starts' wakes and passes are over
            before = store_reads.count
            for i, run in enumerate(runs):
                await client.send_signal(run, "go", i)
                outcome = await client.result(run, timeout="10s")
                assert outcome.output == i  # type: ignore[union-attr]
    assert store_reads.count == before


async def test_a_command_whose_notice_was_lost_is_applied_by_a_later_wake(
    pg_dsn: str,
) -> None:
    async with Serving(pg_dsn) as rt:
        exec_id = str(rt.start_workflow("parked"))
        await asyncio.sleep(0.3)
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            # Queued with no notice at all (as if the worker's LISTEN was down).
            conn.execute(
                "INSERT INTO harvest_commands (command_id, kind, args, submitted_at) "
                "VALUES ('lost', 'send_signal', %s, 0)",
                (f'{{"exec_id": "{exec_id}", "name": "go", "payload": 5}}',),
            )
        # A named command's notice wakes the applier: it takes that row...
        with HarvestClient.connect(pg_dsn) as client:
            other = await client.start_workflow("parked")
            await client.send_signal(other, "go", 6)
            assert (await client.result(other, timeout="10s")).output == 6  # type: ignore[union-attr]
            # ...and the lost one goes with the next wake that names none.
            rt.waker.wake_commands(None)
            outcome = await client.result(exec_id, timeout="10s")
    assert outcome.output == 5  # type: ignore[union-attr]


def test_a_named_row_another_worker_holds_is_skipped_at_once(pg_dsn: str) -> None:
    rt = PostgresRuntime.connect(pg_dsn)
    try:
        rt.register_workflow(parked)
        exec_id = str(rt.start_workflow("parked"))
        queue = PostgresCommandQueue.connect(pg_dsn)
        queue.submit("c-1", "send_signal", "{}", datetime.now(UTC), exec_id)
        queue.close()
        with psycopg.connect(pg_dsn) as winner:
            (row_id,) = winner.execute(
                "SELECT id FROM harvest_commands WHERE command_id = 'c-1' FOR UPDATE"
            ).fetchone()
            taken: list[Any] = []
            thread = threading.Thread(
                target=lambda: taken.append(
                    commands.apply_named(rt._engine, row_id, exec_id)  # noqa: SLF001
                )
            )
            thread.start()
            thread.join(2.0)
            assert not thread.is_alive()
            assert taken == [False]
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            rows = conn.execute("SELECT applied_at FROM harvest_commands").fetchall()
        assert rows == [(None,)]
    finally:
        rt.close()
