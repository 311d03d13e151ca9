"""A serving file is woken by other processes' commits through inotify, not only by its poll."""

from __future__ import annotations

import asyncio
import select
import sqlite3
import sys
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ExecutionOutcome,
    HarvestClient,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.runtime.serving import server as serving
from harvest_engine.store.sqlite.commit_watch import open_commit_watch

if TYPE_CHECKING:
    from pathlib import Path

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="inotify is Linux's"
)


@workflow
async def greet(ctx: WorkflowContext, name: str) -> str:
    return f"hello {name}"


def readable(fd: int, within: float) -> bool:
    ready, _, _ = select.select([fd], [], [], within)
    return bool(ready)


@linux_only
def test_a_commit_by_another_connection_makes_the_watch_readable(
    db_path: Path,
) -> None:
    SqliteRuntime.open(db_path).close()
    other = sqlite3.connect(db_path)
    other.execute("PRAGMA journal_mode=WAL")
    watch = open_commit_watch(str(db_path))
    assert watch is not None
    try:
        assert not readable(watch.fd, 0.05)
        other.execute("CREATE TABLE scratch (x)")
        other.commit()
        assert readable(watch.fd, 5.0)
        watch.drain()
        assert not readable(watch.fd, 0.05)
    finally:
        watch.close()
        other.close()


def test_there_is_no_watch_for_an_in_memory_database_or_a_missing_file(
    tmp_path: Path,
) -> None:
    with SqliteRuntime.open_in_memory() as rt:
        assert rt.store.open_commit_watch() is None
    assert open_commit_watch(str(tmp_path / "missing.db")) is None


@linux_only
async def test_a_client_command_is_applied_at_once_under_a_long_poll(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Neither the poll (30 s) nor the watch's safety read (60 s) can wake the
    # server within the client's 10 s: only the file's change event can.
    monkeypatch.setattr(serving, "WATCH_SAFETY_POLL", 60.0)
    with SqliteRuntime.open(db_path) as rt:
        rt.register_workflow(greet)
        stop = asyncio.Event()
        server = asyncio.create_task(rt.serve(stop, poll_interval="30s"))
        try:
            await asyncio.sleep(0.2)  # the server reads its first data_version
            with HarvestClient.open(db_path) as client:
                exec_id = await client.start_workflow("greet", "ann", timeout="10s")
                outcome = await client.result(exec_id, timeout="10s")
            assert outcome == ExecutionOutcome.Completed(output="hello ann")
        finally:
            stop.set()
            await asyncio.wait_for(server, timeout=10)


async def test_without_a_watch_the_server_polls_data_version(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SqliteRuntime.open(db_path) as rt:
        rt.register_workflow(greet)

        def no_watch() -> Any:
            return None

        monkeypatch.setattr(rt.store, "open_commit_watch", no_watch)
        stop = asyncio.Event()
        server = asyncio.create_task(rt.serve(stop, poll_interval="20ms"))
        try:
            with HarvestClient.open(db_path) as client:
                exec_id = await client.start_workflow("greet", "bo", timeout="10s")
                outcome = await client.result(exec_id, timeout="10s")
            assert outcome == ExecutionOutcome.Completed(output="hello bo")
        finally:
            stop.set()
            await asyncio.wait_for(server, timeout=10)


@linux_only
async def test_a_change_heard_while_the_server_sleeps_its_tick_runs_the_watch_once(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A level-triggered reader left undrained would run on every turn of the
    # event loop until the tick ends: the serving process spun a core after
    # each commit it heard (its own included) instead of sleeping.
    heard: list[int] = []
    with SqliteRuntime.open(db_path) as rt:
        opened = rt.store.open_commit_watch
        watches: list[Any] = []

        def kept_watch() -> Any:
            watch = opened()
            watches.append(watch)
            return watch

        monkeypatch.setattr(rt.store, "open_commit_watch", kept_watch)
        loop = asyncio.get_running_loop()
        add_reader = loop.add_reader

        def counting_reader(fd: int, callback: Any, *args: Any) -> None:
            def counted(*inner: Any) -> None:
                if watches and fd == watches[0].fd:
                    heard.append(1)
                callback(*inner)

            add_reader(fd, counted, *args)

        monkeypatch.setattr(loop, "add_reader", counting_reader)
        stop = asyncio.Event()
        server = asyncio.create_task(rt.serve(stop, poll_interval="300ms"))
        other = sqlite3.connect(db_path)
        try:
            await asyncio.sleep(0.1)  # the server reads its first data_version
            other.execute("CREATE TABLE scratch (x)")
            other.commit()
            await asyncio.sleep(0.05)  # heard: the server now sleeps its tick
            heard.clear()
            other.execute("INSERT INTO scratch VALUES (1)")
            other.commit()
            await asyncio.sleep(0.15)  # still within the tick
        finally:
            other.close()
            stop.set()
            await asyncio.wait_for(server, timeout=10)
    assert watches
    assert watches[0] is not None
    assert 1 <= len(heard) <= 5, len(heard)
