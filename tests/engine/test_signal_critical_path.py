"""The hops of a client's signal round trip on Postgres carry no needless wake or read.

A client's command notice wakes only the serving worker's command applier
(the run loop follows the applier's commit, so it does not take the
worker's connection for a pass's reads ahead of the command's transaction).
"""

from __future__ import annotations

import asyncio
import threading
import time

import psycopg

from harvest_engine.runtime.waker import Waker
from harvest_engine.store.postgres import notify


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
    listener = notify.Listener(pg_dsn, "me", woke.set, on_command=commanded.set)
    try:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_notify(%s, %s)", (notify.CHANNEL, notify.COMMAND_NOTICE)
            )
            assert _heard(commanded)
            time.sleep(0.1)
            assert not woke.is_set()
            conn.execute("SELECT pg_notify(%s, 'another worker')", (notify.CHANNEL,))
            assert _heard(woke)
    finally:
        listener.stop()
